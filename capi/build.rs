//! The shared library's SONAME: `liboware.so.MAJOR`, or `liboware.so.0.MINOR` while the version
//! is 0.x (where a new minor version may break the ABI, as the README's version policy says), so
//! that programs linked against one ABI never load another.
fn main() {
    let major = std::env::var("CARGO_PKG_VERSION_MAJOR").unwrap();
    let minor = std::env::var("CARGO_PKG_VERSION_MINOR").unwrap();
    let abi = if major == "0" { format!("0.{minor}") } else { major };
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,liboware.so.{abi}");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
