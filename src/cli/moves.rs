//! TEMPORARY scaffold: replaced by the real command before landing.
use clap::Args;
use oware::{Error, Result};

#[derive(Args, Debug)]
pub struct MovesArgs {}

pub fn run(_a: MovesArgs) -> Result<()> {
    Err(Error::Usage("not yet implemented".into()))
}
