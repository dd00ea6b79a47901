//! The web page's files (`cli/web/`), each compiled into the program and answered at its own
//! path: the markup (`index.html`) at `/` and `/index.html`, its style at `/page.css`, and its
//! script, three ES modules, at `/game.js` (the entry, which imports the other two),
//! `/board.js` and `/analysis.js`. Each goes out with its media type and
//! `Cache-Control: no-cache` (a browser asks again, so a new program's page is never mixed
//! with an old one's script).

use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

/// One file of the page: the path it is served at, its media type and its text.
struct File {
    path: &'static str,
    content_type: &'static str,
    text: &'static str,
}

const HTML: &str = "text/html; charset=utf-8";
const CSS: &str = "text/css; charset=utf-8";
const SCRIPT: &str = "text/javascript; charset=utf-8";

/// The page's files; the markup, first, is also served at `/index.html`.
static FILES: [File; 5] = [
    File { path: "/", content_type: HTML, text: include_str!("../../web/index.html") },
    File { path: "/page.css", content_type: CSS, text: include_str!("../../web/page.css") },
    File { path: "/game.js", content_type: SCRIPT, text: include_str!("../../web/game.js") },
    File { path: "/board.js", content_type: SCRIPT, text: include_str!("../../web/board.js") },
    File { path: "/analysis.js", content_type: SCRIPT, text: include_str!("../../web/analysis.js") },
];

impl File {
    /// The answer to `GET` (or `HEAD`) of this file.
    fn answer(&self) -> Response {
        ([(header::CONTENT_TYPE, self.content_type), (header::CACHE_CONTROL, "no-cache")], self.text).into_response()
    }
}

/// The routes of the page's files, each answered with its type and `Cache-Control: no-cache`.
pub(crate) fn routes<S: Clone + Send + Sync + 'static>() -> Router<S> {
    let markup = &FILES[0];
    let mut router = Router::new().route("/index.html", get(move || async move { markup.answer() }));
    for file in &FILES {
        router = router.route(file.path, get(move || async move { file.answer() }));
    }
    router
}

#[cfg(test)]
mod tests {
    use super::FILES;

    /// The paths a file names in `attribute="..."` (the markup) or `from "..."` (a module's
    /// imports), each made absolute.
    fn named(text: &str, attribute: &str) -> Vec<String> {
        text.split(attribute).skip(1).filter_map(|rest| rest.split('"').next()).map(|p| p.strip_prefix('.').unwrap_or(p).to_string()).collect()
    }

    /// Every file is named by the markup (a stylesheet, a module it loads or preloads), every
    /// module a script imports is served, and nothing of the page is inline any more.
    #[test]
    fn the_markup_names_every_file_and_every_import_is_served() {
        let markup = FILES[0].text;
        let mut linked = named(markup, "href=\"");
        linked.extend(named(markup, "src=\""));
        for file in &FILES[1..] {
            assert!(linked.iter().any(|p| p == file.path), "index.html does not name {}: {linked:?}", file.path);
        }
        for file in FILES.iter().filter(|f| f.path.ends_with(".js")) {
            for import in named(file.text, "from \"") {
                assert!(FILES.iter().any(|f| f.path == import), "{} imports {import}, which is not served", file.path);
            }
        }
        assert!(!markup.contains("<style") && !markup.contains("<script>"), "index.html holds inline style or script");
    }
}
