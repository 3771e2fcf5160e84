//! What the engine hands its state worker: finished pages sent with their
//! own links (once no shallower page holds the links back), other
//! admissions, loads, saved authority state, robots.txt archives and the
//! records of URLs skipped with an abandoned authority.

use std::collections::HashMap;

use crawlkeeper_model::FinishedUrl;
use tracing::warn;

use super::{Engine, EngineError, records};
use crate::pipeline::url_key;
use crate::state::{AdmitItem, Command, StateError, StateHandle};

impl Engine {
    /// Hands finished pages with their links, other admissions, loads,
    /// saved authority state and skipped records to the store.
    pub(super) fn send_to_store(&mut self, store: &StateHandle) -> Result<(), EngineError> {
        let gone = || StateError::Fatal("state worker stopped".into());
        for token in self.frontier.take_released() {
            if let Some(p) = self.pending_finish.get_mut(&token) {
                p.held = false;
            }
        }
        let mut by_page: HashMap<u64, Vec<AdmitItem>> = HashMap::new();
        let mut loose = Vec::new();
        for o in self.frontier.take_outbox() {
            let item = AdmitItem {
                slot: o.slot,
                key: o.key,
                request: o.request,
                authority: o.authority,
                loaded: o.loaded,
            };
            match o.owner {
                Some(token) => by_page.entry(token).or_default().push(item),
                None => loose.push(item),
            }
        }
        let ready: Vec<u64> = self
            .pending_finish
            .iter()
            .filter(|(_, p)| !p.held)
            .map(|(t, _)| *t)
            .collect();
        for token in ready {
            let Some(p) = self.pending_finish.remove(&token) else {
                continue;
            };
            let links = by_page.remove(&token).unwrap_or_default();
            let finished = FinishedUrl {
                key: url_key(&p.request.url),
                record: p.record,
                json: p.json,
                archive: p.archive,
                next: p.next,
                moved: p.moved,
            };
            store
                .tx
                .send(Command::Finish(Box::new(finished), links))
                .map_err(|_| gone())?;
            self.unconfirmed
                .push_back(self.hold_places.then_some(p.slot));
        }
        // Links of pages still held back stay in the outbox order they came in.
        loose.extend(by_page.into_values().flatten());
        if !loose.is_empty() {
            store.tx.send(Command::Admit(loose)).map_err(|_| gone())?;
        }
        for slot in std::mem::take(&mut self.pending_saves) {
            let saved = self.frontier.saved(slot);
            store.tx.send(Command::Save(saved)).map_err(|_| gone())?;
        }
        for archive in std::mem::take(&mut self.pending_archive) {
            store
                .tx
                .send(Command::Archive(archive))
                .map_err(|_| gone())?;
        }
        for (slot, authority, limit) in self.frontier.take_loads() {
            store
                .tx
                .send(Command::Load {
                    slot,
                    authority,
                    limit,
                })
                .map_err(|_| gone())?;
        }
        for (slot, request) in self.frontier.take_skipped() {
            let limit = self.config.politeness.max_host_errors;
            if !self.stats_of(slot).abandoned {
                self.stats_of(slot).abandoned = true;
                warn!(
                    authority = %self.frontier.authority(slot),
                    failures = limit,
                    "abandoning authority after consecutive failures"
                );
                let saved = self.frontier.saved(slot);
                store.tx.send(Command::Save(saved)).map_err(|_| gone())?;
            }
            let record = records::skipped(&request, limit);
            self.record(slot, &record);
            let finished = FinishedUrl::new(url_key(&request.url), record);
            store
                .tx
                .send(Command::Finish(Box::new(finished), Vec::new()))
                .map_err(|_| gone())?;
            self.unconfirmed.push_back(None);
        }
        Ok(())
    }
}
