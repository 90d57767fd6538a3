// The HTML report in a real browser: headless Chromium renders a report of synthetic results with
// an explanation; the rendered DOM's text must hold the key numbers (counts, fork position, the
// explained op, the top-2 gap, the histogram's table) and the screenshot must not be blank (it must
// hold text and the histogram's bar colour). The inverse: the same check calls a blank page blank.
// Skips visibly where no Chromium is installed.
#include <png.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "gtest/gtest.h"
#include "harness/report/report.h"
#include "tests/cli/subprocess.h"
#include "tests/golden/synthetic_results.h"

namespace samebits {
namespace {

namespace fs = std::filesystem;

std::string find_browser() {
  if (const char* env = std::getenv("SAMEBITS_CHROMIUM"); env && *env) return env;
  for (const char* name : {"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"}) {
    const char* path = std::getenv("PATH");
    std::stringstream dirs(path ? path : "");
    for (std::string dir; std::getline(dirs, dir, ':');) {
      const fs::path p = fs::path(dir) / name;
      if (!dir.empty() && fs::exists(p)) return p.string();
    }
  }
  return "";
}

// Runs the browser headless on `html` with one extra argument; returns its exit status, stdout in *out.
int render(const std::string& browser, const std::string& html, const std::string& what, std::string* out) {
  const std::string profile = testing::temp_path("profile");
  fs::create_directories(profile);
  const std::string stdout_path = testing::temp_path("browser_out");
  const std::string cmd = "'" + browser + "' --headless --no-sandbox --disable-gpu --disable-quic --no-first-run "
                          "--disable-background-networking --disable-component-update --disable-sync "
                          "--user-data-dir='" + profile + "' --window-size=1200,1400 " + what + " 'file://" + html +
                          "' >'" + stdout_path + "' 2>/dev/null </dev/null";
  const int status = std::system(cmd.c_str());
  std::ifstream in(stdout_path);
  std::stringstream s;
  s << in.rdbuf();
  *out = s.str();
  fs::remove_all(profile);
  fs::remove(stdout_path);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// The text of a DOM: tags dropped, entities for & < > decoded, runs of white space made one space.
std::string dom_text(const std::string& dom) {
  std::string body = std::regex_replace(dom, std::regex("<style[\\s\\S]*?</style>"), " ");
  std::string text = std::regex_replace(body, std::regex("<[^>]*>"), " ");
  text = std::regex_replace(text, std::regex("&lt;"), "<");
  text = std::regex_replace(text, std::regex("&gt;"), ">");
  text = std::regex_replace(text, std::regex("&amp;"), "&");
  return std::regex_replace(text, std::regex("\\s+"), " ");
}

struct Screenshot {
  int width = 0, height = 0;
  int64_t pixels_unlike_background = 0;
  std::set<uint32_t> colours;  // RGB
  bool has(uint32_t rgb) const { return colours.count(rgb) > 0; }
};

bool read_png(const std::string& path, Screenshot* shot) {
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_file(&image, path.c_str())) return false;
  image.format = PNG_FORMAT_RGB;
  std::vector<uint8_t> rgb(PNG_IMAGE_SIZE(image));
  if (!png_image_finish_read(&image, nullptr, rgb.data(), 0, nullptr)) return false;
  shot->width = int(image.width), shot->height = int(image.height);
  const uint32_t background = (uint32_t(rgb[0]) << 16) | (uint32_t(rgb[1]) << 8) | rgb[2];
  for (size_t i = 0; i + 2 < rgb.size(); i += 3) {
    const uint32_t c = (uint32_t(rgb[i]) << 16) | (uint32_t(rgb[i + 1]) << 8) | rgb[i + 2];
    if (c != background) ++shot->pixels_unlike_background;
    shot->colours.insert(c);
  }
  return true;
}

bool blank(const Screenshot& s) {
  return s.pixels_unlike_background < int64_t(s.width) * s.height / 500 || s.colours.size() < 4;
}

RunResults report_results(ExplainReport* explained) {
  RunResults r = testing::synthetic_results(1000, {{3, 10}, {7, 10}, {9, 5}}, Mode::kDefault);
  r.modes[0].golden = {"pass", "1000 samples match"};
  Explanation e;
  e.mode = Mode::kDefault;
  e.why = "fork 1 of 2 (2 samples)";
  e.main_sample = 2, e.other_sample = 3, e.fork_token = 10, e.first_logit_step = 2, e.top_step = 10;
  e.prompt_tokens = 32, e.found = true, e.position = 33, e.token_step = 2, e.layer = 1, e.num_layers = 4;
  e.op = "q_proj";
  e.diff = {0.00390625, 1, 3, 256};
  e.main_plan = "matmul{library split_k=4}", e.other_plan = "matmul{library split_k=1}";
  e.plans = {{"q_proj", e.main_plan, e.other_plan}, {"attention", "3 split(s)", "5 split(s)"}};
  e.growth_position = 33;
  e.growth = {{"layer 1 output (first: q_proj)", {0.0078125, 2, 9, 256}}, {"logits", {0.0213, 9000, 40, 256}}};
  e.main_top = {78, 81, 12.5f, 12.4375f};
  e.other_top = {81, 78, 12.5f, 12.4921875f};
  explained->modes.push_back({Mode::kDefault, {e}, ""});
  return r;
}

TEST(HtmlReport, RendersInHeadlessChromiumWithTheKeyNumbers) {
  const std::string browser = find_browser();
  if (browser.empty()) GTEST_SKIP() << "no Chromium found (chromium, chromium-browser, google-chrome or SAMEBITS_CHROMIUM): the HTML report is not rendered";
  ExplainReport explained;
  const RunResults r = report_results(&explained);
  const std::string html = testing::temp_path("report.html");
  std::ofstream(html) << format_html(r, &explained);

  std::string dom;
  ASSERT_EQ(render(browser, html, "--dump-dom", &dom), 0);
  const std::string text = dom_text(dom);
  EXPECT_NE(text.find("samebits: synthetic passed"), std::string::npos) << text.substr(0, 400);
  // The fork tree: 1000 share tokens 0-4; 1 leaves at token 5; of the 999 others 2 leave at token 10.
  EXPECT_NE(text.find("1000 samples main share tokens 0"), std::string::npos) << text;
  EXPECT_NE(text.find("999 samples main at token 5"), std::string::npos) << text;
  EXPECT_NE(text.find("1 sample at token 5"), std::string::npos) << text;
  EXPECT_NE(text.find("997 samples main at token 10"), std::string::npos) << text;
  EXPECT_NE(text.find("2 samples at token 10"), std::string::npos) << text;
  EXPECT_NE(text.find("token 2 (position 33), layer 1, q_proj"), std::string::npos) << text;  // explain
  EXPECT_NE(text.find("q_proj : matmul{library split_k=4} vs matmul{library split_k=1}"), std::string::npos) << text;
  EXPECT_NE(text.find("gap 0.0625"), std::string::npos) << text;                    // top-2 gap, main
  EXPECT_NE(text.find("first logit divergence at token samples"), std::string::npos) << text;  // histogram table
  EXPECT_NE(text.find("default schedule digest"), std::string::npos) << text;       // run identity
  fs::remove(html);
}

TEST(HtmlReport, ScreenshotIsNotBlankAndABlankPageIs) {
  const std::string browser = find_browser();
  if (browser.empty()) GTEST_SKIP() << "no Chromium found: the HTML report is not rendered";
  ExplainReport explained;
  const RunResults r = report_results(&explained);
  const std::string html = testing::temp_path("report.html"), empty = testing::temp_path("empty.html");
  std::ofstream(html) << format_html(r, &explained);
  std::ofstream(empty) << "<!DOCTYPE html><html><body></body></html>\n";
  const std::string png = testing::temp_path("shot.png");
  std::string ignored;

  ASSERT_EQ(render(browser, html, "--screenshot='" + png + "'", &ignored), 0);
  Screenshot shot;
  ASSERT_TRUE(read_png(png, &shot)) << png;
  EXPECT_EQ(shot.width, 1200);
  EXPECT_FALSE(blank(shot)) << shot.pixels_unlike_background << " pixels unlike the background, " << shot.colours.size() << " colours";
  EXPECT_TRUE(shot.has(0x0969da)) << "the histogram's bars (#0969da) are not on screen";
  EXPECT_TRUE(shot.has(0x1a7f37)) << "the verdict's green (#1a7f37) is not on screen";

  fs::remove(png);
  ASSERT_EQ(render(browser, empty, "--screenshot='" + png + "'", &ignored), 0);
  Screenshot none;
  ASSERT_TRUE(read_png(png, &none));
  EXPECT_TRUE(blank(none)) << none.pixels_unlike_background;
  for (const auto& p : {html, empty, png}) fs::remove(p);
}

}  // namespace
}  // namespace samebits
