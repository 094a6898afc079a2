/* stb_image's implementation, compiled into libetproof_demo.a where the system has the header but
 * no library (stb is header-only outside Debian's libstb-dev; CMakeLists.txt, ETPROOF_STB_BUNDLED).
 * On Debian the library is linked instead and this file is not built. */
#define STB_IMAGE_IMPLEMENTATION
#include "stb_image.h"
