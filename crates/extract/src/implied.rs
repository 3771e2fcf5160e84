//! Where an element whose end tag may be left out ends, as the HTML tree
//! builder ends it: lol_html has no tree and reports no implied end, so a
//! field's value of `<li>2<li>3` would run on into the next item. Read
//! from the element's content as written (after its start tag):
//!
//! - `li` ends at the start of another `li`; `dt` and `dd` at the start of
//!   a `dt` or `dd`; `option` at an `option`, `optgroup` or `hr`; `tr` at a
//!   `tr`, `tbody`, `thead`, `tfoot`, `caption` or `colgroup`; `td` and
//!   `th` at those or a `td` or `th`. Not when the start tag belongs to an
//!   element opened inside (a nested list, a nested table): the tree
//!   builder's walk down the stack of open elements stops there.
//! - `p` ends at the start of any element that closes a paragraph (HTML's
//!   "close a p element" list: `address`, `article`, `aside`,
//!   `blockquote`, `div`, `dl`, `h1`–`h6`, `hr`, `li`, `ol`, `pre`,
//!   `section`, `table`, `ul`, …) unless a `button`, `table`, `td`, `th`,
//!   `caption`, `object`, `marquee`, `applet` or `template` opened inside
//!   it is still open (HTML's "button scope"). `table` closes a `p` in
//!   no-quirks mode only; it is taken as closing it (most pages have a
//!   doctype). The start of a table cell or row ends it too (it ends the
//!   cell the `p` is in; outside a table, where the tree builder ignores
//!   such a tag, the value is cut there all the same).
//! - Any of them ends at an end tag of an element not opened inside it
//!   (its parent's: `</ul>`, `</dl>`, `</table>`, `</div>`…), but for
//!   `</p>` and `</br>` (which make elements) and the end tags of inline
//!   elements (which the tree builder ignores or reconstructs).
//!
//! One pass over the content: linear, the stack of elements opened inside
//! bounded ([`MAX_DEPTH`]; deeper, the end is not looked for further).

use super::markup::{Lower, attributes, is_raw_text, is_void, raw_text_end, tag_name_end};

/// The most elements opened inside a value that are followed; a value
/// nested deeper keeps its end as lol_html reported it.
const MAX_DEPTH: usize = 256;

/// An element whose end tag may be left out, by the rule that ends it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Implied {
    /// `li`.
    Li,
    /// `dt`, `dd`.
    DtDd,
    /// `p`.
    P,
    /// `option`.
    Option,
    /// `tr`.
    Tr,
    /// `td`, `th`.
    Cell,
}

impl Implied {
    /// The rule of element `tag` (lower case), if its end tag may be left
    /// out.
    pub(crate) fn of(tag: &str) -> Option<Self> {
        Some(match tag {
            "li" => Self::Li,
            "dt" | "dd" => Self::DtDd,
            "p" => Self::P,
            "option" => Self::Option,
            "tr" => Self::Tr,
            "td" | "th" => Self::Cell,
            _ => return None,
        })
    }

    /// True when start tag `tag` may end the element.
    fn closed_by(self, tag: &str) -> bool {
        match self {
            Self::Li => tag == "li",
            Self::DtDd => matches!(tag, "dt" | "dd"),
            // A cell's or row's start ends the cell, and the `p` in it
            // (taken to be in a table: elsewhere the tag is ignored).
            Self::P => closes_p(tag) || Self::Cell.closed_by(tag),
            Self::Option => matches!(tag, "option" | "optgroup" | "hr"),
            Self::Tr => matches!(
                tag,
                "tr" | "tbody" | "thead" | "tfoot" | "caption" | "colgroup"
            ),
            Self::Cell => matches!(
                tag,
                "td" | "th" | "tr" | "tbody" | "thead" | "tfoot" | "caption" | "colgroup"
            ),
        }
    }

    /// True when element `open`, opened inside, takes a closing start tag
    /// for itself or stops the walk down to the element.
    fn stops_at(self, open: &str, tag: &str) -> bool {
        match self {
            Self::Li | Self::DtDd => {
                (self.closed_by(open) && self.closed_by(tag))
                    || (is_special(open) && !matches!(open, "address" | "div" | "p"))
            }
            Self::P => matches!(
                open,
                "p" | "button"
                    | "table"
                    | "td"
                    | "th"
                    | "caption"
                    | "object"
                    | "marquee"
                    | "applet"
                    | "template"
                    | "html"
                    | "svg"
                    | "math"
            ),
            Self::Option => matches!(open, "option" | "select" | "datalist"),
            Self::Tr => matches!(open, "table" | "tr"),
            Self::Cell => open == "table",
        }
    }
}

/// HTML's list of the start tags that close an open `p` ("close a p
/// element"), with `li`, `dd` and `dt`.
fn closes_p(tag: &str) -> bool {
    matches!(
        tag,
        "address"
            | "article"
            | "aside"
            | "blockquote"
            | "center"
            | "details"
            | "dialog"
            | "dir"
            | "div"
            | "dl"
            | "fieldset"
            | "figcaption"
            | "figure"
            | "footer"
            | "header"
            | "hgroup"
            | "main"
            | "menu"
            | "nav"
            | "ol"
            | "p"
            | "search"
            | "section"
            | "summary"
            | "ul"
            | "h1"
            | "h2"
            | "h3"
            | "h4"
            | "h5"
            | "h6"
            | "pre"
            | "listing"
            | "form"
            | "plaintext"
            | "xmp"
            | "hr"
            | "table"
            | "li"
            | "dd"
            | "dt"
    )
}

/// HTML's "special" elements (those with rules of their own in the tree
/// builder), less the void ones, which are never open.
fn is_special(tag: &str) -> bool {
    matches!(
        tag,
        "address"
            | "applet"
            | "article"
            | "aside"
            | "blockquote"
            | "body"
            | "button"
            | "caption"
            | "center"
            | "colgroup"
            | "dd"
            | "details"
            | "dir"
            | "div"
            | "dl"
            | "dt"
            | "fieldset"
            | "figcaption"
            | "figure"
            | "footer"
            | "form"
            | "frameset"
            | "h1"
            | "h2"
            | "h3"
            | "h4"
            | "h5"
            | "h6"
            | "head"
            | "header"
            | "hgroup"
            | "html"
            | "iframe"
            | "li"
            | "listing"
            | "main"
            | "marquee"
            | "menu"
            | "nav"
            | "noembed"
            | "noframes"
            | "noscript"
            | "object"
            | "ol"
            | "p"
            | "plaintext"
            | "pre"
            | "script"
            | "search"
            | "section"
            | "select"
            | "style"
            | "summary"
            | "table"
            | "tbody"
            | "td"
            | "template"
            | "textarea"
            | "tfoot"
            | "th"
            | "thead"
            | "title"
            | "tr"
            | "ul"
            | "xmp"
    )
}

/// Where, in `content` (an element's content as written, from the end of
/// its start tag), the element of rule `rule` ends implicitly: the index
/// of the tag that ends it, `None` when nothing in `content` does.
pub(crate) fn implied_end(rule: Implied, content: &[u8]) -> Option<usize> {
    let b = content;
    let mut open: Vec<Lower> = Vec::new();
    let mut at = 0;
    while let Some(i) = b.get(at..).and_then(|rest| memchr::memchr(b'<', rest)) {
        let lt = at + i;
        match b.get(lt + 1) {
            Some(b'!') => {
                at = if b.get(lt + 2..lt + 4) == Some(b"--") {
                    // `<!-->` and `<!--->` are empty comments.
                    match b.get(lt + 4..) {
                        Some([b'>', ..]) => lt + 5,
                        Some([b'-', b'>', ..]) => lt + 6,
                        _ => memchr::memmem::find(&b[lt + 4..], b"-->")
                            .map_or(b.len(), |i| lt + 4 + i + 3),
                    }
                } else {
                    super::markup::after_gt(b, lt + 2)
                };
            }
            Some(b'?') => at = super::markup::after_gt(b, lt + 1),
            Some(b'/') if b.get(lt + 2).is_some_and(u8::is_ascii_alphabetic) => {
                let name_end = tag_name_end(b, lt + 2);
                let name = Lower::new(&b[lt + 2..name_end]);
                let tag = name.as_str();
                if let Some(k) = open.iter().rposition(|o| o.as_str() == tag) {
                    open.truncate(k);
                } else if is_special(tag) && tag != "p" || (rule == Implied::P && tag == "p") {
                    return Some(lt);
                }
                at = attributes(b, name_end).map_or(b.len(), |(after, _)| after);
            }
            Some(c) if c.is_ascii_alphabetic() => {
                let name_end = tag_name_end(b, lt + 1);
                let raw_name = &b[lt + 1..name_end];
                let name = Lower::new(raw_name);
                let tag = name.as_str();
                if rule.closed_by(tag) && !open.iter().any(|o| rule.stops_at(o.as_str(), tag)) {
                    return Some(lt);
                }
                let (after, _) = attributes(b, name_end)?;
                at = if is_raw_text(tag) {
                    raw_text_end(b, after, raw_name)
                } else {
                    after
                };
                if !is_void(tag) && !is_raw_text(tag) && !tag.is_empty() {
                    if open.len() >= MAX_DEPTH {
                        return None;
                    }
                    open.push(name);
                }
            }
            _ => at = lt + 1,
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::{Implied, implied_end};

    fn end(tag: &str, content: &str) -> Option<String> {
        let rule = Implied::of(tag).unwrap();
        implied_end(rule, content.as_bytes()).map(|i| content[..i].to_owned())
    }

    #[test]
    fn items_end_at_their_next_sibling_not_at_a_nested_one() {
        assert_eq!(end("li", "2<li>3</ul>").as_deref(), Some("2"));
        assert_eq!(
            end("li", "a<ul><li>b<li>c</ul>d<li>e").as_deref(),
            Some("a<ul><li>b<li>c</ul>d")
        );
        assert_eq!(
            end("li", "a<div><li>b").as_deref(),
            Some("a<div>"),
            "div is no boundary"
        );
        assert_eq!(end("li", "a</ul>b").as_deref(), Some("a"));
        assert_eq!(end("li", "a</b>c</span>d").as_deref(), None);
        assert_eq!(end("dt", "t<dd>d").as_deref(), Some("t"));
        assert_eq!(
            end("dd", "d<dl><dt>x</dl><dt>").as_deref(),
            Some("d<dl><dt>x</dl>")
        );
        assert_eq!(end("option", "a<option>b").as_deref(), Some("a"));
        assert_eq!(end("td", "1<td>2").as_deref(), Some("1"));
        assert_eq!(
            end("td", "1<table><tr><td>x</table><tr>").as_deref(),
            Some("1<table><tr><td>x</table>")
        );
        assert_eq!(end("tr", "<td>1<tr>").as_deref(), Some("<td>1"));
    }

    #[test]
    fn paragraphs_end_at_a_block() {
        assert_eq!(end("p", "x<h2>y</h2>z").as_deref(), Some("x"));
        assert_eq!(end("p", "x <b>y<div>z").as_deref(), Some("x <b>y"));
        assert_eq!(end("p", "x<button><div>y</div></button>z").as_deref(), None);
        assert_eq!(
            end("p", "x<span>y</span>z</p>").as_deref(),
            Some("x<span>y</span>z")
        );
        assert_eq!(end("p", "x</div>").as_deref(), Some("x"));
        assert_eq!(end("p", "x<td>y").as_deref(), Some("x"), "in a cell");
        assert_eq!(end("p", "x<object><td>y</object>z").as_deref(), None);
        assert_eq!(
            end("p", "a<!-- <div> --><script>'<div>'</script>b").as_deref(),
            None
        );
        assert_eq!(
            end("p", "a<!--><div>").as_deref(),
            Some("a<!-->"),
            "an empty comment"
        );
    }

    #[test]
    fn hostile_content_is_read_in_linear_time() {
        let deep = "<span>".repeat(100_000) + &"</x>".repeat(100_000);
        let started = std::time::Instant::now();
        assert_eq!(implied_end(Implied::Li, deep.as_bytes()), None);
        let flat = "<b></b>".repeat(200_000) + "<li>";
        assert_eq!(
            implied_end(Implied::Li, flat.as_bytes()),
            Some(flat.len() - 4)
        );
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
    }
}
