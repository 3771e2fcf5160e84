//! The requisite pages under `/req/`, served by every host: an HTML page
//! (`/req/`) that needs every kind of page requisite a crawler must fetch
//! for a page to render (images by `src`, `srcset` and `<picture>`, a
//! classic and a module script, stylesheets that `@import` others and name fonts and
//! backgrounds, an icon, an iframe with its own image, inline and `<style>`
//! block `url()`s and `@import`s, a video poster, an SVG `<use>`), some of
//! them on the next host standing for a CDN; a second page (`/req/two`)
//! sharing its logo and stylesheet; and the files themselves, each with its
//! right `Content-Type`. No existing page links here: a crawl starts at
//! `/req/` to reach it.
//!
//! A classic script (pywb 2.10 cannot replay module scripts: it wraps
//! every script in a block declaring `let arguments;`, a syntax error in
//! a module, webrecorder/pywb#771) writes `name=width` lines, the natural width of every
//! image the page shows (`<img>`s, the iframe's, and CSS backgrounds loaded
//! again by URL), into `<pre id="widths">` and `done` last, so that a
//! browser's DOM dump tells which images rendered: [`IMAGES`] is what it
//! must show.

use std::fmt::Write as _;
use std::io::Write as _;

use bytes::Bytes;

/// The images of the requisite pages: file name under `/req/` and width
/// (each square, each of a width of its own so that a width tells which
/// file rendered), and whether it is on the CDN host.
pub const IMAGES: [(&str, u32, bool); 11] = [
    ("logo.png", 2, false),
    ("small.png", 3, false),
    ("large.png", 4, true),
    ("picture.png", 5, false),
    ("poster.png", 6, false),
    ("inline.png", 7, false),
    ("style-block.png", 8, false),
    ("block-bg.png", 9, false),
    ("bg.png", 10, true),
    ("framed.png", 11, false),
    ("favicon.png", 12, false),
];

/// The names the page's script reports, with the width each must show
/// when every requisite rendered: an `<img>` by its `id`, a CSS background
/// by `bg:` and its element's `id`, the iframe's image by `frame:` and its
/// `id`.
pub const WIDTHS: [(&str, u32); 10] = [
    ("logo", 2),
    ("srcset", 4),
    ("picture", 5),
    ("bg:poster", 6),
    ("bg:inline", 7),
    ("bg:styled", 8),
    ("bg:block", 9),
    ("bg:hero", 10),
    ("frame:framed", 11),
    ("bg:icon", 12),
];

/// The path of the requisite page, the seed of a crawl of them.
pub const PAGE: &str = "/req/";
/// The path of the second page, sharing [`SHARED`] with the first.
pub const SECOND: &str = "/req/two";
/// What both pages need: the logo (on the page's host) and the
/// stylesheet (on the CDN host), each to be fetched once in a crawl.
pub const SHARED: [(&str, bool); 2] = [("/req/logo.png", false), ("/req/site.css", true)];

/// The `Content-Type` and body of `path` (under `/req/`) on a host whose
/// CDN host (the next host) has origin `cdn`; `None` for a 404.
pub fn file(path: &str, cdn: &str) -> Option<(&'static str, Bytes)> {
    let name = path.strip_prefix("/req/")?;
    if let Some(&(_, w, _)) = IMAGES.iter().find(|(n, _, _)| *n == name) {
        return Some(("image/png", png(w, w)));
    }
    let text = |t: &'static str, s: String| Some((t, Bytes::from(s)));
    match name {
        "" => text(HTML, page(cdn)),
        "two" => text(HTML, second(cdn)),
        "frame" => text(
            HTML,
            leaf("Framed", "<img id=\"framed\" src=\"/req/framed.png\">"),
        ),
        "widths.js" => text("text/javascript", WIDTHS_JS.to_owned()),
        "module.js" => text(
            "text/javascript",
            "// A module script: marks the page as having run it.\n\
             export const ran = true;\n\
             document.documentElement.dataset.module = \"ran\";\n"
                .to_owned(),
        ),
        "site.css" => text(
            "text/css",
            "@import url(\"theme.css\");\nbody { margin: 8px }\n".to_owned(),
        ),
        "theme.css" => text(
            "text/css",
            "@font-face { font-family: Req; src: url(font.woff2) format(\"woff2\") }\n\
             #hero { background: url(bg.png) no-repeat; font-family: Req, sans-serif; \
             width: 40px; height: 40px }\n"
                .to_owned(),
        ),
        "block.css" => text(
            "text/css",
            "#block { background-image: url(block-bg.png); width: 40px; height: 40px }\n"
                .to_owned(),
        ),
        "sprite.svg" => text(
            "image/svg+xml",
            "<svg xmlns=\"http://www.w3.org/2000/svg\"><symbol id=\"dot\" viewBox=\"0 0 8 8\">\
             <circle cx=\"4\" cy=\"4\" r=\"4\" fill=\"teal\"/></symbol></svg>\n"
                .to_owned(),
        ),
        "font.woff2" => Some((
            "font/woff2",
            Bytes::from_static(b"wOF2\0\x01\0\0not a real font, only its bytes"),
        )),
        _ => None,
    }
}

const HTML: &str = "text/html; charset=utf-8";

fn leaf(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{title}</title></head>\
         <body>{body}</body></html>\n"
    )
}

/// `/req/`: every requisite form; the stylesheet, the scripts and
/// the large image on the CDN host at `cdn`.
fn page(cdn: &str) -> String {
    let mut h = String::from(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>Requisites</title>\n",
    );
    let _ = write!(
        h,
        "<link rel=\"stylesheet\" href=\"{cdn}/req/site.css\">\n\
         <link rel=\"icon\" type=\"image/png\" href=\"/req/favicon.png\">\n\
         <style>@import url(\"/req/block.css\");\n\
         #styled {{ background-image: url(/req/style-block.png); width: 40px; height: 40px }}</style>\n\
         <script defer src=\"{cdn}/req/widths.js\"></script>\n\
         <script type=\"module\" src=\"{cdn}/req/module.js\"></script>\n\
         </head><body>\n<h1>Requisites</h1>\n\
         <img id=\"logo\" src=\"/req/logo.png\" alt=\"logo\">\n\
         <img id=\"srcset\" src=\"/req/small.png\" srcset=\"{cdn}/req/large.png 1x, /req/small.png 2x\" alt=\"srcset\">\n\
         <picture><source srcset=\"/req/picture.png\" type=\"image/png\">\
         <img id=\"picture\" src=\"/req/small.png\" alt=\"picture\"></picture>\n\
         <video id=\"poster\" poster=\"/req/poster.png\" width=\"40\" height=\"40\"></video>\n\
         <div id=\"inline\" style=\"background-image: url('/req/inline.png'); width: 40px; height: 40px\"></div>\n\
         <div id=\"styled\"></div>\n<div id=\"block\"></div>\n<div id=\"hero\">hero</div>\n\
         <svg width=\"16\" height=\"16\"><use href=\"/req/sprite.svg#dot\"/></svg>\n\
         <iframe id=\"frame\" src=\"/req/frame\" width=\"60\" height=\"60\"></iframe>\n\
         <pre id=\"widths\"></pre>\n\
         <a href=\"/req/two\">the second page</a>\n\
         </body></html>\n"
    );
    h
}

/// `/req/two`: the logo and the stylesheet of `/req/` again.
fn second(cdn: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>Requisites, two</title>\n\
         <link rel=\"stylesheet\" href=\"{cdn}/req/site.css\"></head><body>\n\
         <img id=\"logo\" src=\"/req/logo.png\" alt=\"logo\">\n\
         <a href=\"/req/\">the first page</a>\n</body></html>\n"
    )
}

/// The classic script: once the page loaded, the natural width of every
/// image it shows, one `name=width` line each (0 for an image that did not
/// load), then `done`.
const WIDTHS_JS: &str = r#"// Writes the natural width of every image the page shows into #widths.
const width = (url) => new Promise((done) => {
  const img = new Image();
  img.onload = () => done(img.naturalWidth);
  img.onerror = () => done(0);
  img.src = url;
});
const cssUrl = (el) => {
  const m = /url\(["']?([^"')]+)["']?\)/.exec(getComputedStyle(el).backgroundImage);
  return m ? m[1] : null;
};
const report = async () => {
  const lines = [];
  for (const img of document.images) lines.push(`${img.id}=${img.naturalWidth}`);
  for (const id of ["inline", "styled", "block", "hero"]) {
    const url = cssUrl(document.getElementById(id));
    lines.push(`bg:${id}=${url ? await width(url) : 0}`);
  }
  const video = document.getElementById("poster");
  lines.push(`bg:poster=${await width(video.poster)}`);
  const icon = document.querySelector("link[rel=icon]");
  lines.push(`bg:icon=${await width(icon.href)}`);
  const frame = document.getElementById("frame").contentDocument;
  for (const img of frame ? frame.images : []) lines.push(`frame:${img.id}=${img.naturalWidth}`);
  lines.push("done");
  document.getElementById("widths").textContent = lines.join("\n");
};
if (document.readyState === "complete") report();
else window.addEventListener("load", report);
"#;

/// A valid `w`×`h` RGBA PNG (one colour), built by hand: signature,
/// `IHDR`, one zlib `IDAT`, `IEND`, each chunk with its CRC.
pub fn png(w: u32, h: u32) -> Bytes {
    // Each row: filter type 0 (none), then its pixels.
    let row: Vec<u8> = std::iter::once(0)
        .chain((0..w).flat_map(|_| [0x20, 0x80, 0xc0, 0xff]))
        .collect();
    let raw = row.repeat(h as usize);
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    z.write_all(&raw).expect("in memory");
    let idat = z.finish().expect("in memory");
    let mut ihdr = Vec::with_capacity(13);
    ihdr.extend_from_slice(&w.to_be_bytes());
    ihdr.extend_from_slice(&h.to_be_bytes());
    ihdr.extend_from_slice(&[8, 6, 0, 0, 0]); // 8 bits, RGBA, deflate, no filter set, no interlace
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    for (kind, data) in [
        (b"IHDR", &ihdr[..]),
        (b"IDAT", &idat[..]),
        (b"IEND", &[][..]),
    ] {
        out.extend_from_slice(&u32::try_from(data.len()).expect("small").to_be_bytes());
        let mut crc = flate2::Crc::new();
        crc.update(kind);
        crc.update(data);
        out.extend_from_slice(kind);
        out.extend_from_slice(data);
        out.extend_from_slice(&crc.sum().to_be_bytes());
    }
    Bytes::from(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_named_file_is_served_with_its_type() {
        for (name, _, _) in IMAGES {
            let (t, body) = file(&format!("/req/{name}"), "http://cdn").unwrap();
            assert_eq!(t, "image/png");
            assert!(body.starts_with(b"\x89PNG\r\n\x1a\n"));
        }
        let page = file(PAGE, "http://cdn:1").unwrap().1;
        let page = String::from_utf8_lossy(&page);
        for needed in [
            "http://cdn:1/req/site.css",
            "http://cdn:1/req/widths.js",
            "http://cdn:1/req/module.js",
            "http://cdn:1/req/large.png",
            "/req/logo.png",
        ] {
            assert!(page.contains(needed), "{needed}");
        }
        assert_eq!(file("/req/font.woff2", "").unwrap().0, "font/woff2");
        assert_eq!(file("/req/theme.css", "").unwrap().0, "text/css");
        assert!(file("/req/none", "").is_none());
    }

    #[test]
    fn a_png_has_its_size_and_right_crcs() {
        let p = png(4, 4);
        assert_eq!(&p[16..24], &[0, 0, 0, 4, 0, 0, 0, 4]);
        // The IEND chunk's CRC is a well-known constant.
        assert!(p.ends_with(&[0, 0, 0, 0, b'I', b'E', b'N', b'D', 0xae, 0x42, 0x60, 0x82]));
    }
}
