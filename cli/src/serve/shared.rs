//! What every request sees: the options, the databases opened so far (one per ruleset, reopened
//! when a file changed or was replaced under it) and the search engines made over them.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use oware::probe::Database;
use oware::search::Engine;
use oware::storage::ReadMode;
use oware::Ruleset;
use tokio::sync::Semaphore;

use super::errors::{ApiError, ApiResult};
use crate::args::DatabaseArgs;

/// One ruleset's open database and when to look next for files replaced under it.
pub(crate) struct Opened {
    db: Arc<Database>,
    next_replaced_check: Instant,
}

/// What every request sees: the options and the databases opened so far (one per ruleset).
pub(crate) struct Shared {
    pub(crate) db: DatabaseArgs,
    pub(crate) default_rules: Ruleset,
    pub(crate) open: Mutex<HashMap<Ruleset, Opened>>,
    /// Batches running at once (the other blocking threads stay free for single positions).
    pub(crate) heavy: Semaphore,
    /// Seconds a request body may take to arrive.
    pub(crate) client_timeout: Duration,
    /// One search engine per ruleset, made on first use of `GET /api/v1/analyse` over the
    /// database then open (and made anew once that database is reopened).
    pub(crate) engines: Mutex<HashMap<Ruleset, EngineOn>>,
    /// Engine searches running at once (one thread each); a search holds its permit until it
    /// has stopped.
    pub(crate) searches: Arc<Semaphore>,
    /// The longest search `GET /api/v1/analyse` runs.
    pub(crate) max_movetime: Duration,
    /// On a loopback address: the `Host` values served (lowercase, without the port).
    pub(crate) hosts: Option<Vec<String>>,
}

/// A ruleset's search engine and the database it was made over.
pub(crate) type EngineOn = (Arc<Database>, Arc<Engine>);

/// How often (at most) the server looks for layer files replaced by rename.
const REPLACED_CHECK: Duration = Duration::from_millis(500);

impl Shared {
    /// The database of `rules` (opened on first use, layers read with `pread`), and whether to
    /// look now for files replaced under it.
    pub(crate) fn database(&self, rules: Ruleset) -> ApiResult<(Arc<Database>, bool)> {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        if let Some(o) = open.get_mut(&rules) {
            let due = now >= o.next_replaced_check;
            if due {
                o.next_replaced_check = now + REPLACED_CHECK;
            }
            return Ok((o.db.clone(), due));
        }
        let db = Arc::new(self.db.database_for(rules).map_err(ApiError::from)?.read_mode(ReadMode::Pread));
        open.insert(rules, Opened { db: db.clone(), next_replaced_check: now + REPLACED_CHECK });
        Ok((db, false))
    }

    /// Drops `db` (when it is still the one open for `rules`): the next request opens the
    /// directory again, so a file changed or replaced is read anew.
    fn forget(&self, rules: Ruleset, db: &Arc<Database>) {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        if open.get(&rules).is_some_and(|o| Arc::ptr_eq(&o.db, db)) {
            open.remove(&rules);
        }
    }

    /// Runs `f` on the database of `rules`, then checks that no open file changed while it ran
    /// (or before): if one did, the database is reopened and `f` runs again, once, so that only
    /// the answers needing a damaged layer fail (naming it) and a file replaced by rename is
    /// read anew. A file still changing gives its error.
    pub(crate) fn with_database<T>(&self, rules: Ruleset, f: impl Fn(&Arc<Database>) -> ApiResult<T>) -> ApiResult<T> {
        let mut attempt = 0;
        loop {
            let (db, look_for_replaced) = self.database(rules)?;
            let result = f(&db);
            let changed = db.check_open_files().err();
            let replaced = look_for_replaced && !db.replaced_files().is_empty();
            if changed.is_none() && !replaced {
                return result;
            }
            self.forget(rules, &db);
            attempt += 1;
            if attempt == 2 {
                return match changed {
                    Some(e) => Err(ApiError::from(e)),
                    None => result,
                };
            }
        }
    }

    /// The engine of `rules` over `db`, the ruleset's open database: made on first use, and
    /// anew when the database was reopened (a file changed or was replaced), so that the engine
    /// reads what the other requests read; and anew when a layer (or its bounds or depths)
    /// was built beside the database since the engine was made ([`Engine::outdated`]), so that
    /// the engine probes what `/position` answers from. Without tables when it has no layer 0.
    pub(crate) fn engine(&self, rules: Ruleset, db: &Arc<Database>) -> ApiResult<Arc<Engine>> {
        if let Some((on, e)) = self.engines.lock().unwrap_or_else(|p| p.into_inner()).get(&rules) {
            if Arc::ptr_eq(on, db) && !e.outdated() {
                return Ok(e.clone());
            }
        }
        let engine = Arc::new(Engine::new(rules, Some(db.clone()), None).map_err(ApiError::from)?);
        let mut engines = self.engines.lock().unwrap_or_else(|p| p.into_inner());
        match engines.get(&rules) {
            Some((on, e)) if Arc::ptr_eq(on, db) && e.tables() >= engine.tables() && !e.outdated() => Ok(e.clone()),
            _ => {
                engines.insert(rules, (db.clone(), engine.clone()));
                Ok(engine)
            }
        }
    }
}
