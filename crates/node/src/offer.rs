//! What each node offers the jobs it may be given: the processors its
//! operator configured (`--processor NAME=…`), by name, written at
//! `…/node/<name>/processors` when it starts. `submit` refuses a job that
//! uses a processor no live Runner offers and gives its shards only to the
//! Runners that offer them all; `status` names a shard held by a node
//! that lacks one.

use std::collections::BTreeSet;

use crawlkeeper_cluster::{CoordError, Coordinator, CreateMode, Layout, MetaError, metadata};
use crawlkeeper_crawl::CrawlConfig;
use crawlkeeper_model::cluster::NodeName;
use serde::{Deserialize, Serialize};

/// A node's offer, as stored.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Offer {
    /// The processors it runs, by name.
    pub processors: Vec<String>,
    /// It renders pages (`--render` jobs): it has a browser. False in an
    /// offer written before rendering existed.
    #[serde(default)]
    pub browser: bool,
}

/// Writes `name`'s offer (replacing what an earlier run of it wrote).
pub async fn publish(
    c: &impl Coordinator,
    layout: &Layout,
    name: &NodeName,
    offer: &Offer,
) -> Result<(), MetaError> {
    let path = layout.processors(name);
    match metadata::write(c, &path, offer, None).await {
        Ok(_) => Ok(()),
        Err(MetaError::Coord(CoordError::NoNode(_))) => {
            c.create_all(&layout.node(name)).await?;
            metadata::create(c, &path, offer, CreateMode::Persistent).await?;
            Ok(())
        }
        Err(e) => Err(e),
    }
}

/// `name`'s offer; a node that wrote none (an older version) offers no
/// processor.
pub async fn read(
    c: &impl Coordinator,
    layout: &Layout,
    name: &NodeName,
) -> Result<Offer, MetaError> {
    Ok(metadata::read::<Offer>(c, &layout.processors(name))
        .await?
        .map(|(o, _)| o)
        .unwrap_or_default())
}

/// The processors a job's stored options use, and a browser when it
/// renders ([`CrawlConfig::needs`]; none when they do not decode: the
/// Runner reports those).
pub fn used_by(options: &str) -> Vec<String> {
    serde_json::from_str::<CrawlConfig>(options)
        .map(|c| c.needs())
        .unwrap_or_default()
}

/// The processors of `needed` that `offer` lacks (and its browser).
pub fn lacking(needed: &[String], offer: &Offer) -> Vec<String> {
    let have: BTreeSet<&str> = offer.processors.iter().map(String::as_str).collect();
    needed
        .iter()
        .filter(|n| match n.as_str() {
            crawlkeeper_crawl::render::BROWSER => !offer.browser,
            n => !have.contains(n),
        })
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crawlkeeper_cluster::MemoryCoordinator;
    use std::time::Duration;

    #[tokio::test]
    async fn an_offer_is_written_read_back_and_replaced() {
        let c = MemoryCoordinator::standalone(Duration::from_secs(4));
        let layout = Layout::new("g").unwrap();
        let name: NodeName = "crawler_1".parse().unwrap();
        assert_eq!(read(&c, &layout, &name).await.unwrap(), Offer::default());
        let offer = Offer {
            processors: vec!["products".into()],
            browser: true,
        };
        publish(&c, &layout, &name, &offer).await.unwrap();
        assert_eq!(read(&c, &layout, &name).await.unwrap(), offer);
        publish(&c, &layout, &name, &Offer::default())
            .await
            .unwrap();
        assert_eq!(read(&c, &layout, &name).await.unwrap(), Offer::default());
    }

    #[test]
    fn a_job_lacks_what_an_offer_does_not_name() {
        let mut config = CrawlConfig::default();
        config.pipeline.processors = vec!["products".into(), "prices".into()];
        let options = serde_json::to_string(&config).unwrap();
        let needed = used_by(&options);
        let mut offer = Offer {
            processors: vec!["prices".into()],
            browser: false,
        };
        assert_eq!(lacking(&needed, &offer), ["products"]);
        // A job that renders needs a browser too.
        config.render = Some(Default::default());
        let needed = used_by(&serde_json::to_string(&config).unwrap());
        let browser = crawlkeeper_crawl::render::BROWSER;
        assert_eq!(lacking(&needed, &offer), ["products", browser]);
        offer.browser = true;
        assert_eq!(lacking(&needed, &offer), ["products"]);
        assert!(used_by("{}").is_empty());
        assert!(used_by("not json").is_empty());
    }
}
