// The chart libraries the HTML report inlines (Vega, Vega-Lite, vega-embed from npm, pinned in
// report/package-lock.json), compiled into the binary by cmake/embed_report_assets.cmake.
#pragma once
#include <string_view>

namespace schedtwin::report {

struct ReportAssets {
  std::string_view vega;        // vega/build/vega.min.js
  std::string_view vega_lite;   // vega-lite/build/vega-lite.min.js
  std::string_view vega_embed;  // vega-embed/build/vega-embed.min.js
  std::string_view versions;    // "vega 6.4.0, vega-lite 6.5.0, vega-embed 7.3.0"
  std::string_view notice;      // the packages' licence texts, each after "NAME VERSION (LICENSE):"
};

// The embedded libraries, or nullptr when report/node_modules was missing when the build was
// configured (scripts/install-deps.sh installs it; configure and build again after).
const ReportAssets* embedded_report_assets();

}  // namespace schedtwin::report
