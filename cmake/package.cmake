# The Debian package (docs/operations.md, "Install and remove"): `cpack -G DEB` in a
# build tree configured with -DCMAKE_INSTALL_PREFIX=/usr (packaging/build-deb.sh does
# both) makes trialq_<version>_<arch>.deb of every component: the programs, the web UI,
# the trial SDK and NNI's launcher shim, the systemd units (installed, not enabled: the
# package has no maintainer script that enables or starts anything), the man pages, the
# bash completion, the documents and the examples.

# the documents in Debian's place for them (/usr/share/doc/trialq), the examples beside
# the web UI (/usr/share/trialq/examples: images that leave out /usr/share/doc keep them,
# and the README's quickstart runs one)
install(FILES README.md DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT doc)
install(DIRECTORY docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT doc)
install(DIRECTORY examples DESTINATION ${CMAKE_INSTALL_DATADIR}/trialq COMPONENT runtime
        PATTERN "__pycache__" EXCLUDE)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME trialq)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGING_INSTALL_PREFIX ${CMAKE_INSTALL_PREFIX})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "NNI-compatible hyperparameter-tuning experiment manager")
set(CPACK_PACKAGE_DESCRIPTION "trialq runs NNI experiments with NNI's nnictl commands, YAML config, \
trial API and REST API; all experiment, trial and metric state lives in one SQLite database, and \
any of its processes may be killed at any moment without losing anything.")
set(CPACK_PACKAGE_CONTACT "trialq developers")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_STRIP_FILES TRUE)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# The runtime libraries the programs link (Debian 12's packages of the .so files ldd
# lists: tests/package/deb.sh checks each against this list) and python3 for the trial
# SDK, the dispatcher of Python algorithms and the relay.
set(CPACK_DEBIAN_PACKAGE_DEPENDS
  "libc6, libsqlite3-0, libcurl4, libyaml-0-2, libcjson1, libssh2-1, libevent-2.1-7, libssl3, python3")
# prerm: the bytecode of the SDK that trials compiled as root, which dpkg would leave
configure_file(${CMAKE_SOURCE_DIR}/packaging/prerm.in ${CMAKE_BINARY_DIR}/packaging/tmp/prerm @ONLY)
file(COPY ${CMAKE_BINARY_DIR}/packaging/tmp/prerm DESTINATION ${CMAKE_BINARY_DIR}/packaging
     FILE_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
set(TRIALQ_PRERM ${CMAKE_BINARY_DIR}/packaging/prerm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA ${TRIALQ_PRERM})
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION TRUE)
include(CPack)
