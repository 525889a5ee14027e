//! Embeds the web UI's build (`ui/dist`, committed: `cargo build` needs no npm) as a table of
//! `(path, bytes)` for `src/ui.rs`. Each file goes in through `include_bytes!`, so cargo
//! rebuilds when one changes; the directory itself is watched for files added or removed.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let dist = manifest.join("../../ui/dist");
    println!("cargo:rerun-if-changed={}", dist.display());
    let mut files = Vec::new();
    if dist.is_dir() {
        collect(&dist, &dist, &mut files);
    } else {
        println!("cargo:warning=ui/dist is missing: the web UI is not embedded (cd ui && npm ci && npm run build)");
    }
    // Sorted, so the generated table (and the binary) does not depend on directory order.
    files.sort();
    let mut out = String::from("/// The files of `ui/dist`: path relative to it (with `/`), contents.\npub(crate) static ASSETS: &[(&str, &[u8])] = &[\n");
    for (relative, absolute) in &files {
        println!("cargo:rerun-if-changed={}", absolute.display());
        writeln!(
            out,
            "    ({relative:?}, include_bytes!({:?})),",
            absolute.display().to_string()
        )
        .expect("writing to a String");
    }
    out.push_str("];\n");
    let target =
        PathBuf::from(std::env::var_os("OUT_DIR").expect("set by cargo")).join("ui_assets.rs");
    std::fs::write(target, out).expect("write ui_assets.rs");
}

fn collect(root: &Path, dir: &Path, files: &mut Vec<(String, PathBuf)>) {
    let entries = std::fs::read_dir(dir).expect("read ui/dist");
    for entry in entries {
        let path = entry.expect("read ui/dist").path();
        if path.is_dir() {
            println!("cargo:rerun-if-changed={}", path.display());
            collect(root, &path, files);
        } else {
            let relative = path.strip_prefix(root).expect("under the root");
            let relative = relative
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join("/");
            let absolute = path.canonicalize().expect("canonical path");
            files.push((relative, absolute));
        }
    }
}
