# Installs headers, the library, attnConfig.cmake / attnConfigVersion.cmake and attn.pc.
include(CMakePackageConfigHelpers)

install(TARGETS attn EXPORT attnTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/attn ${PROJECT_BINARY_DIR}/include/attn
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.hpp")

set(ATTN_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/attn)
install(EXPORT attnTargets NAMESPACE attn:: DESTINATION ${ATTN_CMAKE_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/attnConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/attnConfig.cmake
                              INSTALL_DESTINATION ${ATTN_CMAKE_DIR})
# Before 1.0 a minor version may break the API: 0.1 accepts 0.1.x only.
if(PROJECT_VERSION_MAJOR EQUAL 0)
  set(_attn_compat SameMinorVersion)
else()
  set(_attn_compat SameMajorVersion)
endif()
write_basic_package_version_file(${PROJECT_BINARY_DIR}/attnConfigVersion.cmake
                                 VERSION ${PROJECT_VERSION} COMPATIBILITY ${_attn_compat})
install(FILES ${PROJECT_BINARY_DIR}/attnConfig.cmake ${PROJECT_BINARY_DIR}/attnConfigVersion.cmake
        DESTINATION ${ATTN_CMAKE_DIR})

# attn.pc finds its prefix relative to itself, so `cmake --install --prefix DIR` works anywhere.
file(RELATIVE_PATH ATTN_PC_TO_PREFIX "/prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/prefix")
# The OpenMP flag links the runtime a static libattn.a needs: in Libs, since plain
# `pkg-config --libs attn` omits Libs.private; a shared libattn carries it itself.
string(REPLACE ";" " " _attn_openmp_flags "${OpenMP_CXX_FLAGS}")
if(BUILD_SHARED_LIBS)
  set(ATTN_PC_LIBS_OPENMP "")
  set(ATTN_PC_LIBS_PRIVATE_OPENMP " ${_attn_openmp_flags}")
else()
  set(ATTN_PC_LIBS_OPENMP " ${_attn_openmp_flags}")
  set(ATTN_PC_LIBS_PRIVATE_OPENMP "")
endif()
configure_file(${PROJECT_SOURCE_DIR}/cmake/attn.pc.in ${PROJECT_BINARY_DIR}/attn.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/attn.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
