# Cross-compiling the runtime half's worker (etproof-worker) for 64-bit Arm Linux with Debian's
# g++-aarch64-linux-gnu (setup.sh): the aarch64 executorch wheel's SDK comes in on
# CMAKE_PREFIX_PATH; headers-only host packages (nlohmann-json) are read from /usr/include, which
# Debian's cross compiler searches after its own; libraries (libssl-dev:arm64, multiarch) from
# /usr/lib/aarch64-linux-gnu. The result runs under qemu-aarch64 (etproof/emulation.h).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
# Programs (git) from the host; packages and libraries from the prefix path and the host's
# multiarch folders alike.
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
# pkg-config (FindOpenSSL asks it first) answers for the target's multiarch folder, not the host's.
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig")
