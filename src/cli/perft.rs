//! TEMPORARY scaffold: replaced by the real command before landing.
use clap::Args;
use oware::{Error, Result};

#[derive(Args, Debug)]
pub struct PerftArgs {}

pub fn run(_a: PerftArgs) -> Result<()> {
    Err(Error::Usage("not yet implemented".into()))
}
