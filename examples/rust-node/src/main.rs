//! `shop-node`: every `crawlkeeper` command, plus an extractor of its own.
//!
//! ```sh
//! cargo build --release -p crawlkeeper-example-node
//! shop-node crawl https://shop.example/product/1 --extractor shop
//! shop-node node --name crawler_1 --zookeeper … --store postgres://…   # on each machine
//! shop-node submit --extractor shop https://shop.example/ --follow
//! ```
//!
//! The `shop` extractor reads a product page's price (the first
//! `class="price"` element's text) into the field `price_cents`, beside
//! whatever `--extract` and the processors add. A job names it with
//! `--extractor shop`, which is part of the job's identity: every node of
//! the cluster must be this binary (or another that registers `shop`).

use std::process::ExitCode;

use crawlkeeper_crawl::{Extracted, Extractor, FieldValue, Page, Registry};

/// The price of a product page, in cents, as the field `price_cents`.
struct Shop;

impl Extractor for Shop {
    fn name(&self) -> &str {
        "shop"
    }

    fn extract(&self, page: &Page<'_>, out: &mut Extracted) {
        if !page.response.is_html() {
            return;
        }
        if let Some(cents) = price_cents(&page.response.body) {
            out.fields
                .insert("price_cents".into(), FieldValue::Json(cents.into()));
        }
    }
}

/// The first `class="price"` element's text as cents (`19.99` → 1999);
/// `None` when there is none or it is not a price. The page is hostile:
/// only a bounded piece of it is read, and nothing can panic.
fn price_cents(body: &[u8]) -> Option<u64> {
    const MARK: &[u8] = b"class=\"price\"";
    let at = body.windows(MARK.len()).position(|w| w == MARK)?;
    let rest = body.get(at + MARK.len()..)?;
    let start = rest.iter().position(|b| *b == b'>')? + 1;
    let text = rest.get(start..(start + 32).min(rest.len()))?;
    let end = text.iter().position(|b| *b == b'<').unwrap_or(text.len());
    let price = std::str::from_utf8(&text[..end]).ok()?.trim();
    let (whole, cents) = price.split_once('.').unwrap_or((price, "0"));
    let cents: u64 = format!("{cents:0<2}").get(..2)?.parse().ok()?;
    whole
        .parse::<u64>()
        .ok()?
        .checked_mul(100)?
        .checked_add(cents)
}

fn main() -> ExitCode {
    let mut registry = Registry::builtin();
    registry.add_extractor("shop", |_| Ok(Box::new(Shop)));
    crawlkeeper_cli::Commands::new(registry).main()
}

#[cfg(test)]
mod tests {
    use super::price_cents;

    #[test]
    fn prices_read_as_cents_and_anything_else_as_none() {
        let page = |p: &str| format!("<h1>x</h1><span class=\"price\">{p}</span>");
        assert_eq!(price_cents(page("19.99").as_bytes()), Some(1999));
        assert_eq!(price_cents(page(" 7.5 ").as_bytes()), Some(750));
        assert_eq!(price_cents(page("12").as_bytes()), Some(1200));
        assert_eq!(price_cents(page("free").as_bytes()), None);
        assert_eq!(
            price_cents(page("99999999999999999999.00").as_bytes()),
            None
        );
        assert_eq!(price_cents(b"<p>no price</p>"), None);
        assert_eq!(price_cents(b"class=\"price\""), None);
    }
}
