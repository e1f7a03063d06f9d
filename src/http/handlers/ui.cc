// GET/HEAD /ui/ and /ui/<file>: the dashboard's static files (ui/, embedded
// by cmake/EmbedUi.cmake; docs/dashboard.md, decision 0026). Anyone who
// reaches the HTTP port may load them, as Consul's UI: the page holds no
// data; what it shows comes from the API under the token its user types in.
#include <string>
#include <string_view>

#include "common/strings.h"
#include "http/api.h"
#include "http/ui_assets.h"

namespace tenure::http {
namespace {

// Nothing from elsewhere: scripts and styles only from this server's files
// (no inline script), requests only to this server, no framing, no forms.
constexpr std::string_view kContentSecurityPolicy =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";
constexpr std::string_view kAllow = "OPTIONS,GET,HEAD";

HttpResponse Hardened(HttpResponse response) {
  response.headers.emplace_back("X-Content-Type-Options", "nosniff");
  response.headers.emplace_back("Content-Security-Policy", std::string(kContentSecurityPolicy));
  response.headers.emplace_back("X-Frame-Options", "DENY");
  response.headers.emplace_back("Referrer-Policy", "no-referrer");
  return response;
}

const UiAsset* FindAsset(std::string_view name) {
  for (const UiAsset& asset : UiAssets()) {
    if (asset.name == name) return &asset;
  }
  return nullptr;
}

}  // namespace

bool IsUiPath(std::string_view path) { return path == "/ui" || StartsWith(path, "/ui/"); }

// The query string is ignored: the files are the same whatever it says.
void Api::Ui(const CallPtr& call) {
  const std::string& path = call->request->path;
  const std::string& method = call->request->method;
  if (path == "/ui") {
    HttpResponse redirect = HttpResponse::Text(301, "");
    redirect.headers.emplace_back("Location", "/ui/");
    call->Reply(Hardened(std::move(redirect)));
    return;
  }
  if (method == "OPTIONS") {
    HttpResponse ok = HttpResponse::Text(200, "");
    ok.content_type.clear();
    ok.headers.emplace_back("Allow", std::string(kAllow));
    call->Reply(Hardened(std::move(ok)));
    return;
  }
  if (method != "GET" && method != "HEAD") {
    HttpResponse not_allowed = HttpResponse::Text(405, "method " + method + " not allowed");
    not_allowed.headers.emplace_back("Allow", std::string(kAllow));
    call->Reply(Hardened(std::move(not_allowed)));
    return;
  }
  std::string_view name = std::string_view(path).substr(4);  // after "/ui/"
  if (name.empty()) name = "index.html";
  const UiAsset* asset = FindAsset(name);
  if (asset == nullptr) {
    call->Reply(Hardened(HttpResponse::Text(
        404, "Invalid URL path: not a file of the dashboard (the dashboard is at /ui/)")));
    return;
  }
  HttpResponse response;
  response.content_type = std::string(asset->content_type);
  response.headers.emplace_back("Cache-Control", "no-cache");
  response.headers.emplace_back("ETag", std::string(asset->etag));
  if (auto match = call->request->Header("if-none-match"); match && *match == asset->etag) {
    response.status = 304;
  } else {
    response.body = std::string(asset->body);
  }
  call->Reply(Hardened(std::move(response)));
}

}  // namespace tenure::http
