# SPDX-License-Identifier: Apache-2.0
#
# Debian packages, made by CPack's DEB generator from the install components
# (scripts/package.sh runs it; docs/packaging.md says why CPack rather than
# debhelper):
#
#   libcufile0        runtime: libcufile.so.0 in the multiarch directory,
#                     the same library behind opencufile/libcufile.so.0 (a
#                     directory that holds nothing else, for an ld.so.conf.d
#                     entry that puts ours first), the sample configuration
#                     /etc/opencufile/cufile.json (a conffile; /etc/cufile.json
#                     links to it only where no such file exists)
#   libcufile-dev     dev: cufile.h, libcufile.so, cufile.pc, CMake package
#   opencufile-tools  tools: gdsio, gdscheck, gds_stats and their man pages
#
# Dependencies on other packages come from dpkg-shlibdeps; the package's
# own shlibs file is generated.  opencufile-tools gets zlib1g that way when
# gdscheck links zlib (OCF_GDSCHECK_ZLIB, to read /proc/config.gz); naming
# it here as well would list it twice.  The files below are installed only in a
# build configured with -DOPENCUFILE_DEB=ON, so a plain `cmake --install`
# never writes to /etc.

option(OPENCUFILE_DEB "Install the files that only the Debian packages carry" OFF)
set(OPENCUFILE_DEB_MAINTAINER "opencufile maintainers <maintainers@opencufile.invalid>"
  CACHE STRING "Maintainer field of the Debian packages")

set(OCF_PKG_DIR ${PROJECT_SOURCE_DIR}/packaging)
set(OCF_DEB_RUNTIME libcufile0)
set(OCF_DEB_DEV libcufile-dev)
set(OCF_DEB_TOOLS opencufile-tools)

# Man pages (and the changelog) are installed gzip -9n compressed, as Debian
# wants; where gzip is missing they are installed as they are.
find_program(OCF_GZIP gzip)
function(ocf_install_gzipped src dest_dir component)
  get_filename_component(name ${src} NAME)
  if(OCF_GZIP)
    set(out ${CMAKE_CURRENT_BINARY_DIR}/gz/${component}/${name}.gz)
    add_custom_command(OUTPUT ${out}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_CURRENT_BINARY_DIR}/gz/${component}
      COMMAND ${OCF_GZIP} -9nc ${src} > ${out}
      DEPENDS ${src} VERBATIM)
    string(MAKE_C_IDENTIFIER "ocf_gz_${component}_${name}" tgt)
    add_custom_target(${tgt} ALL DEPENDS ${out})
    install(FILES ${out} DESTINATION ${dest_dir} COMPONENT ${component})
  else()
    install(FILES ${src} DESTINATION ${dest_dir} COMPONENT ${component})
  endif()
endfunction()

ocf_install_gzipped(${PROJECT_SOURCE_DIR}/tools/gdsio.1 ${CMAKE_INSTALL_MANDIR}/man1 tools)
ocf_install_gzipped(${PROJECT_SOURCE_DIR}/tools/gdscheck.1 ${CMAKE_INSTALL_MANDIR}/man1 tools)
ocf_install_gzipped(${PROJECT_SOURCE_DIR}/tools/gds_stats.1 ${CMAKE_INSTALL_MANDIR}/man1 tools)

if(OPENCUFILE_DEB)
  # opencufile/libcufile.so.0 -> ../libcufile.so.0: listed first in
  # /etc/ld.so.conf.d, this directory makes ours win over any other
  # libcufile.so.0 in the ld.so cache without reordering other libraries.
  file(MAKE_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/deb-links)
  file(CREATE_LINK ../libcufile.so.0 ${CMAKE_CURRENT_BINARY_DIR}/deb-links/libcufile.so.0 SYMBOLIC)
  install(FILES ${CMAKE_CURRENT_BINARY_DIR}/deb-links/libcufile.so.0
    DESTINATION ${CMAKE_INSTALL_LIBDIR}/opencufile COMPONENT runtime)
  install(FILES ${OCF_PKG_DIR}/cufile.json DESTINATION ${CMAKE_INSTALL_FULL_SYSCONFDIR}/opencufile
    COMPONENT runtime)
  foreach(comp_pkg IN ITEMS "runtime;${OCF_DEB_RUNTIME}" "dev;${OCF_DEB_DEV}" "tools;${OCF_DEB_TOOLS}")
    list(GET comp_pkg 0 comp)
    list(GET comp_pkg 1 pkg)
    install(FILES ${OCF_PKG_DIR}/copyright DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/${pkg}
      COMPONENT ${comp})
    # A native package: changelog.gz, not changelog.Debian.gz.
    configure_file(${OCF_PKG_DIR}/changelog ${CMAKE_CURRENT_BINARY_DIR}/deb-doc/${comp}/changelog COPYONLY)
    ocf_install_gzipped(${CMAKE_CURRENT_BINARY_DIR}/deb-doc/${comp}/changelog
      ${CMAKE_INSTALL_DATAROOTDIR}/doc/${pkg} ${comp})
  endforeach()
  # Maintainer scripts and control files of libcufile0, under the names
  # dpkg-deb wants.
  foreach(f IN ITEMS postinst prerm triggers conffiles)
    configure_file(${OCF_PKG_DIR}/${OCF_DEB_RUNTIME}.${f} ${CMAKE_CURRENT_BINARY_DIR}/deb-control/${f} COPYONLY)
  endforeach()
endif()

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME opencufile)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "${OPENCUFILE_DEB_MAINTAINER}")
set(CPACK_PACKAGE_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/deb)
# Stage with DESTDIR so that /etc/... lands in the package, not on the host.
set(CPACK_SET_DESTDIR ON)
set(CPACK_PACKAGING_INSTALL_PREFIX ${CMAKE_INSTALL_PREFIX})
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL runtime dev tools)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${OPENCUFILE_DEB_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# The tools need the libcufile.so.0 of this build, which no installed package
# provides yet: dpkg-shlibdeps finds it here and leaves it out, and the
# component dependency below names libcufile0 (= version) instead.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS ${CMAKE_CURRENT_BINARY_DIR})
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
# dev and tools depend on the exact libcufile0 built with them.
set(CPACK_DEBIAN_ENABLE_COMPONENT_DEPENDS ON)
set(CPACK_COMPONENT_DEV_DEPENDS runtime)
set(CPACK_COMPONENT_TOOLS_DEPENDS runtime)

set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME ${OCF_DEB_RUNTIME})
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY ">=")
if(OPENCUFILE_DEB)
  set(CPACK_DEBIAN_RUNTIME_PACKAGE_CONTROL_EXTRA
    ${CMAKE_CURRENT_BINARY_DIR}/deb-control/postinst
    ${CMAKE_CURRENT_BINARY_DIR}/deb-control/prerm
    ${CMAKE_CURRENT_BINARY_DIR}/deb-control/triggers
    ${CMAKE_CURRENT_BINARY_DIR}/deb-control/conffiles)
endif()
set(CPACK_COMPONENT_RUNTIME_DESCRIPTION "open implementation of the cuFile (GPUDirect Storage) API
opencufile provides libcufile.so.0, a drop-in for NVIDIA's cuFile library
(API version 1.15): programs linked with -lcufile, torch.cuda.gds and
cuda.bindings.cufile run against it unchanged. It needs no kernel module;
the CUDA driver is loaded at run time, and without one the library still
does all host-memory I/O.")

set(CPACK_DEBIAN_DEV_PACKAGE_NAME ${OCF_DEB_DEV})
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_COMPONENT_DEV_DESCRIPTION "open implementation of the cuFile API - development files
cufile.h, the libcufile.so link, a pkg-config file (pkg-config --cflags
--libs cufile) and a CMake package (find_package(opencufile), target
opencufile::cufile). cufile.h includes cuda.h, which comes with a CUDA
toolkit.")

set(CPACK_DEBIAN_TOOLS_PACKAGE_NAME ${OCF_DEB_TOOLS})
set(CPACK_DEBIAN_TOOLS_PACKAGE_SECTION utils)
set(CPACK_COMPONENT_TOOLS_DESCRIPTION "open implementation of the cuFile API - gdsio, gdscheck, gds_stats
gdsio measures cuFile reads and writes with NVIDIA's gdsio options;
gdscheck reports which libcufile a process loads and why, the effective
configuration, GPUs, file systems and the data path reads will take;
gds_stats prints the cuFile statistics of a running process or of a
command run under it.")

include(CPack)
