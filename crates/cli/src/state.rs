//! Which store the command uses, opened with messages fit for a user.

use crawlkeeper_job::Location;
use crawlkeeper_store::location::is_postgres;
use crawlkeeper_store::{Store, StoreError};

use crate::args::StoreArgs;
use crate::exit::CliError;

/// Refuses a `--store` that is neither a PostgreSQL location nor an
/// existing file (exit 2), without repeating it: it may hold a password,
/// and a typo must never become a new SQLite file named after it.
pub fn check_location(args: &StoreArgs) -> Result<(), CliError> {
    match &args.store {
        Some(s) if !is_postgres(s) && !std::path::Path::new(s).is_file() => Err(CliError::Usage(
            "--store is neither a PostgreSQL database (a postgres:// or postgresql:// URL, or \
             libpq key=value words such as 'host=db.example dbname=crawl') nor an existing \
             state file (a new SQLite state file is --state PATH)"
                .to_owned(),
        )),
        _ => Ok(()),
    }
}

/// Where the arguments keep the state.
pub fn location(args: &StoreArgs) -> Location {
    match &args.store {
        Some(s) => Location::Store(s.clone()),
        None => Location::File(args.state.clone()),
    }
}

/// Opens the store the arguments name (creating a SQLite `--state` file
/// that does not exist). Messages show the location with its password
/// hidden.
pub fn open_store(args: &StoreArgs) -> Result<Box<dyn Store>, CliError> {
    check_location(args)?;
    Ok(location(args).open()?)
}

/// Opens a store that must exist already: a SQLite file that is not there
/// is an error (a typo must not leave an empty database behind).
pub fn open_existing_store(args: &StoreArgs) -> Result<Box<dyn Store>, CliError> {
    if args.store.is_none() && !args.state.exists() {
        return Err(CliError::Usage(format!(
            "state file '{}' does not exist",
            args.state.display()
        )));
    }
    open_store(args)
}

/// A store error as the command's error.
pub fn fatal(e: StoreError) -> CliError {
    CliError::Fatal(anyhow::anyhow!(e))
}
