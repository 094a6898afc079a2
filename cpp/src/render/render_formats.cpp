// etproof/render_formats.cpp — what every report's table of formats shares (etproof/render/formats.h).
#include "etproof/render/formats.h"

namespace etproof {

std::string json_report(const nlohmann::json& doc) {
  return doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace etproof
