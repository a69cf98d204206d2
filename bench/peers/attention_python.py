#!/usr/bin/env python3
"""PyTorch and the seed's NumPy attention on the shapes attn-bench uses, one thread, fp32.

Peers for the attention rows of the README's benchmark table. Needs Debian's python3-torch
and/or python3-numpy (run with /usr/bin/python3). Prints, per shape, the median time of each
peer in microseconds and its GFLOP/s (4 * B * H * n * n * d flops), as a table or as JSON.

  /usr/bin/python3 bench/peers/attention_python.py [--json] [--causal] [--repeats N]
"""
import argparse
import json
import math
import os
import statistics
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

SHAPES = [(1, 1, 6, 16), (1, 12, 128, 64), (1, 12, 512, 64), (1, 8, 2048, 64), (1, 1, 4096, 64)]


def median_seconds(fn, budget=2.0, repeats=5):
    fn()  # warm-up
    start = time.perf_counter()
    fn()
    once = max(time.perf_counter() - start, 1e-7)
    inner = max(1, int(budget / repeats / once))
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(inner):
            fn()
        samples.append((time.perf_counter() - start) / inner)
    return statistics.median(samples)


def numpy_peer(b, h, n, d, causal):
    import numpy as np

    rng = np.random.default_rng(42)
    q, k, v = (rng.standard_normal((b, h, n, d)).astype(np.float32) for _ in range(3))
    mask = np.triu(np.full((n, n), -np.inf, dtype=np.float32), k=1) if causal else None

    def softmax(x, axis=-1):  # the seed's
        x_max = np.max(x, axis=axis, keepdims=True)
        exp_x = np.exp(x - x_max)
        return exp_x / np.sum(exp_x, axis=axis, keepdims=True)

    def run():  # the seed's scaled_dot_product_attention, over every (batch, head)
        scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(d)
        if mask is not None:
            scores = scores + mask
        return softmax(scores, axis=-1) @ v

    return run


def torch_peers(b, h, n, d, causal):
    """PyTorch's candidate CPU paths; the table reports the fastest."""
    import torch

    torch.set_num_threads(1)
    g = torch.Generator().manual_seed(42)
    q, k, v = (torch.randn(b, h, n, d, generator=g) for _ in range(3))
    sdpa = getattr(torch.nn.functional, "scaled_dot_product_attention", None)
    if sdpa is not None:  # PyTorch >= 2.0
        return [lambda: sdpa(q, k, v, is_causal=causal)]
    private = getattr(torch.nn.functional, "_scaled_dot_product_attention", None)  # 1.13
    mask = torch.triu(torch.full((n, n), float("-inf")), diagonal=1) if causal else None
    scale = 1.0 / math.sqrt(d)

    def run():  # batched matmul + softmax + matmul
        qq, kk, vv = q.view(b * h, n, d), k.view(b * h, n, d), v.view(b * h, n, d)
        if mask is not None:
            scores = torch.baddbmm(mask.expand(b * h, n, n), qq, kk.transpose(1, 2), alpha=scale)
        else:
            scores = torch.bmm(qq, kk.transpose(1, 2)).mul_(scale)
        return torch.bmm(torch.softmax(scores, dim=-1), vv)

    paths = [run]
    if private is not None:
        paths.append(lambda: private(q, k, v, None, 0.0, False, causal))
    return paths


def numpy_peers(b, h, n, d, causal):
    return [numpy_peer(b, h, n, d, causal)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--causal", action="store_true")
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    rows = []
    for b, h, n, d in SHAPES:
        flops = 4.0 * b * h * n * n * d
        row = {"shape": f"{b}x{h}x{n}x{d}", "causal": args.causal}
        for name, make in (("pytorch", torch_peers), ("numpy_seed", numpy_peers)):
            try:
                t = min(median_seconds(fn, repeats=args.repeats) for fn in make(b, h, n, d, args.causal))
            except ImportError:
                continue
            row[name + "_us"] = t * 1e6
            row[name + "_gflops"] = flops / t * 1e-9
        rows.append(row)
    if args.json:
        print(json.dumps(rows, indent=1))
        return
    print(f"{'B x H x n x d':>16} {'PyTorch us':>12} {'GFLOP/s':>8} {'NumPy us':>12} {'GFLOP/s':>8}")
    for r in rows:
        print(f"{r['shape']:>16} {r.get('pytorch_us', float('nan')):12.1f} "
              f"{r.get('pytorch_gflops', float('nan')):8.1f} {r.get('numpy_seed_us', float('nan')):12.1f} "
              f"{r.get('numpy_seed_gflops', float('nan')):8.1f}")


if __name__ == "__main__":
    main()
