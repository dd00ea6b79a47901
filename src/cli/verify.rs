//! TEMPORARY scaffold: replaced by the real command before landing.
use clap::Args;
use oware::{Error, Result};

#[derive(Args, Debug)]
pub struct VerifyArgs {}

pub fn run(_a: VerifyArgs) -> Result<()> {
    Err(Error::Usage("not yet implemented".into()))
}
