// CPU model, CPU count and cache sizes, from Linux's /proc and /sys; cache sizes from glibc's
// sysconf (which reads cpuid) where /sys has none, as in some VMs (empty fields elsewhere).
#include <unistd.h>

#include <fstream>
#include <string>
#include <thread>

#include "peak.hpp"

namespace attn_bench {
namespace {

std::string read_line(const std::string& path) {
  std::ifstream f(path);
  std::string s;
  std::getline(f, s);
  return s;
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  const auto e = s.find_last_not_of(" \t");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

std::string pretty_kib(long kib) {
  if (kib >= 1024 && kib % 1024 == 0) return std::to_string(kib / 1024) + " MiB";
  return std::to_string(kib) + " KiB";
}

// "49152K" or "48K" → "48 KiB"; "1024K" → "1 MiB".
std::string pretty_size(const std::string& sysfs) {
  if (sysfs.empty() || sysfs.back() != 'K') return sysfs;
  return pretty_kib(std::stol(sysfs.substr(0, sysfs.size() - 1)));
}

// "L1d 48 KiB, L2 1 MiB, L3 508 MiB (sysconf)", or empty where glibc does not know them.
std::string sysconf_caches() {
  std::string out;
#if defined(_SC_LEVEL1_DCACHE_SIZE)
  const struct {
    const char* name;
    int key;
  } levels[] = {{"L1d", _SC_LEVEL1_DCACHE_SIZE},
                {"L2", _SC_LEVEL2_CACHE_SIZE},
                {"L3", _SC_LEVEL3_CACHE_SIZE}};
  for (const auto& level : levels) {
    const long bytes = sysconf(level.key);
    if (bytes <= 0) continue;
    if (!out.empty()) out += ", ";
    out += std::string(level.name) + " " + pretty_kib(bytes / 1024);
  }
  if (!out.empty()) out += " (sysconf)";
#endif
  return out;
}

}  // namespace

SystemInfo system_info() {
  SystemInfo info;
  // x86 lists "cpu family" and "model" before "model name": the brand string alone does not
  // tell CPU generations apart (the Zen 4 and Zen 5 VMs both say "AMD EPYC").
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string family, model;
  for (std::string line; std::getline(cpuinfo, line);) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string key = trim(line.substr(0, colon));
    const std::string value = trim(line.substr(colon + 1));
    if (key == "cpu family") family = value;
    if (key == "model") model = value;
    if (key == "model name" || key == "Model" || key == "Hardware") {
      info.cpu_model = value;
      if (!family.empty() && !model.empty())
        info.cpu_model += " (family " + family + " model " + model + ")";
      break;
    }
  }
  info.cpus = static_cast<int>(std::thread::hardware_concurrency());
  for (int i = 0; i < 8; ++i) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/";
    const std::string level = read_line(dir + "level");
    if (level.empty()) break;
    const std::string type = read_line(dir + "type");
    std::string name = "L" + level;
    if (type == "Data") name += "d";
    if (type == "Instruction") name += "i";
    if (!info.caches.empty()) info.caches += ", ";
    info.caches += name + " " + pretty_size(read_line(dir + "size"));
  }
  if (info.caches.empty()) info.caches = sysconf_caches();
  return info;
}

}  // namespace attn_bench
