// The dashboard's static files (ui/ in the source tree), compiled into the
// binary by cmake/EmbedUi.cmake (decision 0026): served by handlers/ui.cc at
// /ui/ with no file on disk and nothing fetched from elsewhere.
#pragma once

#include <span>
#include <string_view>

namespace tenure::http {

struct UiAsset {
  std::string_view name;          // "index.html", "app.js", ...: the path after /ui/
  std::string_view content_type;  // "text/javascript; charset=utf-8", ...
  std::string_view etag;          // a quoted digest of the body, "\"0123abcd...\""
  std::string_view body;
};

// Every embedded file, sorted by name. Defined in the generated
// ${build}/src/ui_assets.cc.
std::span<const UiAsset> UiAssets();

}  // namespace tenure::http
