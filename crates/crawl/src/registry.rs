//! Processors by name: the built-in ones, and any a library user adds.
//! [`Registry::build`] turns a [`CrawlConfig`] into a [`Pipeline`],
//! reporting every configuration problem at once.

use std::collections::BTreeMap;
use std::sync::Arc;

use url::Url;

use crate::config::{ConfigError, CrawlConfig};
use crate::normalize::Normalizer;
use crate::pipeline::Pipeline;
use crate::process::{ChildProcessor, ChildSettings, Processor, ProcessorCommand};
use crate::scope::{
    DepthScoper, HostScoper, PatternScoper, SchemeScoper, ScopeChain, Scoper, UrlLengthScoper,
};
use crawlkeeper_extract::{Extractor, HtmlExtractor};
use crawlkeeper_fetch::{Fetcher, HttpFetcher, Politeness};

/// What a processor factory may look at.
#[derive(Debug, Clone, Copy)]
pub struct BuildContext<'a> {
    /// The crawl's configuration.
    pub config: &'a CrawlConfig,
    /// The crawl's seeds, normalised.
    pub seeds: &'a [Url],
}

/// Why a factory could not build its processor: any error (a message is
/// `"…".into()`), shown to the user as one of the configuration's problems.
pub type BuildError = Box<dyn std::error::Error + Send + Sync>;

/// Builds an extractor; the error explains a bad configuration.
pub type ExtractorFactory =
    Box<dyn Fn(&BuildContext<'_>) -> Result<Box<dyn Extractor>, BuildError> + Send + Sync>;
/// Builds a scoper; the error explains a bad configuration.
pub type ScoperFactory =
    Box<dyn Fn(&BuildContext<'_>) -> Result<Box<dyn Scoper>, BuildError> + Send + Sync>;
/// Builds the fetcher.
pub type FetcherFactory =
    Box<dyn Fn(&BuildContext<'_>) -> Result<Arc<dyn Fetcher>, BuildError> + Send + Sync>;

/// Builds a processor (one per crawl: a child-process processor starts
/// its own children, ended with the crawl).
pub type ProcessorFactory =
    Box<dyn Fn(&BuildContext<'_>) -> Result<Arc<dyn Processor>, BuildError> + Send + Sync>;

/// The processors a pipeline can be built from, by name.
pub struct Registry {
    fetcher: FetcherFactory,
    /// The bounds per host and per IP address every crawl built here
    /// shares (a node's jobs, a library user's crawls).
    politeness: Arc<Politeness>,
    /// The process's browsers, for crawls that render (`--render`).
    renderer: Option<Arc<crawlkeeper_render::Renderer>>,
    extractors: BTreeMap<String, ExtractorFactory>,
    scopers: BTreeMap<String, ScoperFactory>,
    processors: BTreeMap<String, ProcessorFactory>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry")
            .field("extractors", &self.extractors.keys().collect::<Vec<_>>())
            .field("scopers", &self.scopers.keys().collect::<Vec<_>>())
            .field("processors", &self.processors.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl Default for Registry {
    fn default() -> Self {
        Self::builtin()
    }
}

impl Registry {
    /// The built-in processors: the `html` extractor and the `scheme`,
    /// `url-length`, `host`, `depth` and `pattern` scopers, and the HTTP fetcher.
    pub fn builtin() -> Self {
        let politeness = Politeness::new();
        let gates = politeness.clone();
        let mut r = Self {
            fetcher: Box::new(move |ctx| {
                let engine = &ctx.config.engine;
                HttpFetcher::new(&ctx.config.fetch, ctx.seeds)
                    .map(|f| f.polite(gates.clone(), engine.per_host, engine.ip_limit()))
                    .map(|f| Arc::new(f) as Arc<dyn Fetcher>)
                    .map_err(BuildError::from)
            }),
            politeness,
            renderer: None,
            extractors: BTreeMap::new(),
            scopers: BTreeMap::new(),
            processors: BTreeMap::new(),
        };
        r.add_extractor("html", |ctx| {
            HtmlExtractor::from_config(&ctx.config.extract)
                .map(|x| x.with_requisites(ctx.config.scope.requisites.is_some()))
                .map(|x| Box::new(x) as Box<dyn Extractor>)
                .map_err(BuildError::from)
        });
        r.add_scoper("scheme", |_| Ok(Box::new(SchemeScoper)));
        r.add_scoper("url-length", |ctx| {
            Ok(Box::new(UrlLengthScoper {
                max: ctx.config.scope.max_url_length,
            }))
        });
        r.add_scoper("depth", |ctx| {
            Ok(Box::new(DepthScoper {
                max: ctx.config.scope.max_depth,
            }))
        });
        r.add_scoper("host", |ctx| {
            Ok(Box::new(HostScoper::new(
                ctx.config.scope.hosts,
                ctx.seeds.iter().filter_map(Url::host_str),
                &ctx.config.scope.allow_hosts,
            )))
        });
        r.add_scoper("pattern", |ctx| {
            PatternScoper::new(&ctx.config.scope.include, &ctx.config.scope.exclude)
                .map(|p| Box::new(p) as Box<dyn Scoper>)
                .map_err(BuildError::from)
        });
        r
    }

    /// Adds (or replaces) the extractor called `name`.
    pub fn add_extractor<F>(&mut self, name: &str, factory: F)
    where
        F: Fn(&BuildContext<'_>) -> Result<Box<dyn Extractor>, BuildError> + Send + Sync + 'static,
    {
        self.extractors.insert(name.to_owned(), Box::new(factory));
    }

    /// Adds (or replaces) the scoper called `name`.
    pub fn add_scoper<F>(&mut self, name: &str, factory: F)
    where
        F: Fn(&BuildContext<'_>) -> Result<Box<dyn Scoper>, BuildError> + Send + Sync + 'static,
    {
        self.scopers.insert(name.to_owned(), Box::new(factory));
    }

    /// Adds (or replaces) the processor called `name` (run on every 2xx
    /// page of a crawl whose configuration names it in
    /// [`PipelineConfig::processors`](crate::config::PipelineConfig::processors)).
    pub fn add_processor<F>(&mut self, name: &str, factory: F)
    where
        F: Fn(&BuildContext<'_>) -> Result<Arc<dyn Processor>, BuildError> + Send + Sync + 'static,
    {
        self.processors.insert(name.to_owned(), Box::new(factory));
    }

    /// Adds the processor an operator configured (`--processor
    /// NAME=COMMAND`): child processes of `command`, started for each crawl
    /// that uses it and ended with it.
    pub fn add_command(&mut self, command: ProcessorCommand, settings: ChildSettings) {
        let name = command.name.clone();
        self.add_processor(&name, move |_| {
            Ok(Arc::new(ChildProcessor::new(command.clone(), settings)) as Arc<dyn Processor>)
        });
    }

    /// The names of the processors registered, in order.
    pub fn processor_names(&self) -> Vec<String> {
        self.processors.keys().cloned().collect()
    }

    /// What this process can give its jobs ([`CrawlConfig::needs`]): its
    /// processors, and [`BROWSER`](crate::render::BROWSER) when it
    /// renders.
    pub fn capabilities(&self) -> Vec<String> {
        let mut names = self.processor_names();
        if self.renderer.is_some() {
            names.push(crate::render::BROWSER.to_owned());
        }
        names
    }

    /// The bounds per host and per IP address the crawls built here
    /// share: a node gives them to its cluster's lease keeper
    /// ([`Politeness::share`]).
    pub fn politeness(&self) -> &Arc<Politeness> {
        &self.politeness
    }

    /// Gives crawls that render (`--render`) these browsers.
    pub fn set_renderer(&mut self, renderer: Arc<crawlkeeper_render::Renderer>) {
        self.renderer = Some(renderer);
    }

    /// The browsers crawls render with, if this process has any.
    pub fn renderer(&self) -> Option<&Arc<crawlkeeper_render::Renderer>> {
        self.renderer.as_ref()
    }

    /// Replaces the fetcher.
    pub fn set_fetcher<F>(&mut self, factory: F)
    where
        F: Fn(&BuildContext<'_>) -> Result<Arc<dyn Fetcher>, BuildError> + Send + Sync + 'static,
    {
        self.fetcher = Box::new(factory);
    }

    /// Builds the pipeline `config` names, or every problem found.
    pub fn build(&self, config: &CrawlConfig, seeds: &[Url]) -> Result<Pipeline, ConfigError> {
        let mut problems = match config.validate() {
            Ok(()) => Vec::new(),
            Err(e) => e.problems,
        };
        let ctx = BuildContext { config, seeds };
        let fetcher = (self.fetcher)(&ctx)
            .map_err(|e| problems.push(e.to_string()))
            .ok();
        let mut extractors = Vec::new();
        for name in &config.pipeline.extractors {
            match self.extractors.get(name) {
                Some(f) => match f(&ctx) {
                    Ok(x) => extractors.push(x),
                    Err(e) => problems.push(format!("extractor '{name}': {e}")),
                },
                None => problems.push(format!(
                    "unknown extractor '{name}' (known: {})",
                    join_keys(&self.extractors)
                )),
            }
        }
        let mut scopers = Vec::new();
        for name in &config.pipeline.scopers {
            match self.scopers.get(name) {
                Some(f) => match f(&ctx) {
                    Ok(s) => scopers.push(s),
                    Err(e) => problems.push(format!("scoper '{name}': {e}")),
                },
                None => problems.push(format!(
                    "unknown scoper '{name}' (known: {})",
                    join_keys(&self.scopers)
                )),
            }
        }
        let mut processors = Vec::new();
        for name in &config.pipeline.processors {
            match self.processors.get(name) {
                Some(f) => match f(&ctx) {
                    Ok(p) => processors.push(p),
                    Err(e) => problems.push(format!("processor '{name}': {e}")),
                },
                None if self.processors.is_empty() => problems.push(format!(
                    "unknown processor '{name}' (none is configured here: add --processor {name}=COMMAND)"
                )),
                None => problems.push(format!(
                    "unknown processor '{name}' (configured here: {})",
                    join_keys(&self.processors)
                )),
            }
        }
        let render = self.render(config, &mut problems);
        match fetcher {
            Some(fetcher) if problems.is_empty() => Ok(Pipeline {
                render,
                processors,
                fetcher,
                extractors,
                scope: ScopeChain::new(scopers),
                normalizer: Normalizer::new(&config.scope.strip_params),
                follow: config.scope.follow,
                max_redirects: config.engine.max_redirects,
                max_links_per_page: config.engine.max_links_per_page,
                extract_timeout: config.engine.extract_timeout,
                wants_fields: !config.extract.asks_no_fields(),
                // Pages kept in the store are archived; a WARC file output
                // attaches its own archiver (`Engine::archive`).
                archiver: (config.archive.store_bodies && config.fetch.capture).then(|| {
                    Arc::new(crate::Archiver::new(
                        Some(config.archive.gzip_level.min(9)),
                        false,
                    ))
                }),
                sitemaps: config.scope.sitemaps,
                requisites: config.scope.requisites,
                max_url_length: config.scope.max_url_length,
                signatures: config.revisit.is_some(),
                text_signatures: config
                    .revisit
                    .as_ref()
                    .is_some_and(|r| r.signature == crate::config::SignatureOf::Text),
            }),
            _ => Err(ConfigError { problems }),
        }
    }
}

impl Registry {
    /// What a crawl that renders needs, or its problems.
    fn render(
        &self,
        config: &CrawlConfig,
        problems: &mut Vec<String>,
    ) -> Option<crate::render::Render> {
        let job = config.render.as_ref()?;
        let plan = job.plan().map_err(|e| problems.push(e)).ok()?;
        let Some(renderer) = self.renderer.clone() else {
            problems.push(
                "the crawl renders pages (--render), but this process runs no browser".into(),
            );
            return None;
        };
        Some(crate::render::Render {
            renderer,
            when: job.when,
            plan,
            robots: crate::render::RobotsCache::default(),
            shared: Default::default(),
        })
    }
}

fn join_keys<V>(map: &BTreeMap<String, V>) -> String {
    map.keys()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_config_builds() {
        let seeds = [Url::parse("http://a.test/").unwrap()];
        let p = Registry::builtin()
            .build(&CrawlConfig::default(), &seeds)
            .unwrap();
        assert_eq!(
            p.scope.names(),
            ["scheme", "url-length", "host", "depth", "pattern"]
        );
        assert_eq!(p.extractors.len(), 1);
    }

    #[test]
    fn unknown_names_and_bad_patterns_are_all_reported() {
        let mut c = CrawlConfig::default();
        c.pipeline.extractors.push("pdf".into());
        c.pipeline.scopers.push("nope".into());
        c.scope.exclude.push("(".into());
        c.engine.per_host = 0;
        let Err(err) = Registry::builtin().build(&c, &[]) else {
            panic!("expected an error");
        };
        assert_eq!(err.problems.len(), 4, "{err}");
        assert!(
            err.to_string()
                .contains("unknown extractor 'pdf' (known: html)")
        );
    }

    #[test]
    fn a_field_whose_selector_does_not_parse_is_refused() {
        // A configuration read as JSON (a submitted job) is not checked by
        // the command line's parser: the html extractor refuses it.
        let mut c = CrawlConfig::default();
        c.extract.fields.push(crawlkeeper_extract::FieldSpec {
            name: "price".into(),
            selector: "div[".into(),
            take: crawlkeeper_extract::Take::Text,
            all: false,
        });
        let Err(err) = Registry::builtin().build(&c, &[]) else {
            panic!("expected an error");
        };
        assert!(
            err.to_string()
                .contains("extractor 'html': 'price=div[::text': selector 'div[' does not parse"),
            "{err}"
        );
        c.extract.fields[0].selector = "div.price".into();
        assert!(Registry::builtin().build(&c, &[]).is_ok());
    }
}
