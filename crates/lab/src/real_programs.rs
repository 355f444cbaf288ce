//! `real-programs [--dir DIR]`: builds the programs nobody here wrote that the studies and
//! benchmarks run beside the bundled workloads, for riscv64, static, from the C sources
//! vendored in crates on crates.io, so every row that names them can be regenerated:
//!
//! * Lua 5.5.1 from `lua-src` 551.1.0 (the library) and `scripts/real-programs/luadrv.c` (a
//!   `lua SCRIPT` main: the crate has no `lua.c`), with the scripts `fib.lua` and `gc.lua`;
//! * SQLite 3.54.1 from `libsqlite3-sys` 0.40.0's amalgamation and
//!   `scripts/real-programs/sqldrv.c` (20,000 rows, an index, a `GROUP BY`, a self-join, a
//!   sort, in memory);
//! * zstd 1.5.7 from `zstd-sys` 2.1.3's `lib/` and `scripts/real-programs/zstddrv.c`
//!   (`zstd LEVEL FILE`: one-shot compression, checked by decompressing), with `input.txt`
//!   (zstd 1.5.7's own library sources, 1.8 MB, the same on every build).
//!
//! Cargo fetches the crates (pinned with `=`; checksums from the registry index) into its own
//! cache: the task writes a manifest naming them under `target/real-programs/fetch` and asks
//! `cargo metadata` where their sources are. Builds use `riscv64-linux-gnu-gcc -O2 -g
//! -static`, as these programs' users build them, and are skipped when the binary is newer
//! than its driver.

use crate::{Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The crates and versions the sources come from.
const CRATES: [(&str, &str); 3] = [
    ("lua-src", "551.1.0"),
    ("libsqlite3-sys", "0.40.0"),
    ("zstd-sys", "2.1.3+zstd.1.5.7"),
];

/// Options of `real-programs`.
#[derive(Debug, Clone)]
pub struct Config {
    /// Where the programs and their inputs go (default target/real-programs).
    pub dir: Option<PathBuf>,
}

/// The built programs: the directory holding `lua`, `sqlite`, `zstd`, `fib.lua`, `gc.lua`
/// and `input.txt`.
pub struct RealPrograms {
    /// Where they are (`target/real-programs` unless given).
    pub dir: PathBuf,
}

/// `real-programs`: builds them and prints where.
pub fn run(
    args: Config,
    out: &mut dyn std::io::Write,
    log: &mut (dyn std::io::Write + Send),
) -> Result<()> {
    let r = build(args.dir.as_deref(), log)?;
    say!(out, "built in {}:", r.dir.display());
    for (cmd, what) in COMMANDS {
        say!(out, "  {cmd:<22} {what}");
    }
    Ok(())
}

/// The commands the studies run (in the directory), and what each is.
pub const COMMANDS: [(&str, &str); 4] = [
    (
        "./lua fib.lua",
        "Lua 5.5.1: recursive fib(27), tostring, table.sort, a loop, pcall",
    ),
    (
        "./lua gc.lua",
        "Lua 5.5.1: table trees, records relinked, upvalue writes",
    ),
    (
        "./sqlite",
        "SQLite 3.54.1: 20,000 rows, index, GROUP BY, self-join, sort",
    ),
    (
        "./zstd 3 input.txt",
        "zstd 1.5.7: level 3 on its own 1.8 MB of library sources, round trip",
    ),
];

/// The repository root.
fn root() -> PathBuf {
    crate::root()
}

/// Builds the programs into `dir` (default target/real-programs), fetching the crates first.
pub fn build(dir: Option<&Path>, log: &mut (dyn std::io::Write + Send)) -> Result<RealPrograms> {
    let root = root().canonicalize()?;
    let dir = dir.map_or_else(|| root.join("target/real-programs"), Path::to_path_buf);
    std::fs::create_dir_all(&dir)?;
    let dir = dir.canonicalize()?;
    let src = sources(&root)?;
    let drivers = root.join("scripts/real-programs");
    let cc = std::env::var("CROSS").unwrap_or_else(|_| "riscv64-linux-gnu-".into()) + "gcc";
    let flags = ["-O2", "-g", "-static", "-w"];
    let stale = |bin: &Path, driver: &str| -> bool {
        let built = std::fs::metadata(bin).and_then(|m| m.modified()).ok();
        let source = std::fs::metadata(drivers.join(driver))
            .and_then(|m| m.modified())
            .ok();
        !matches!((built, source), (Some(b), Some(s)) if b >= s)
    };
    let mut gcc = |out: &Path, args: Vec<std::ffi::OsString>| -> Result<()> {
        note!(log, "real-programs: building {}", out.display());
        let o = Command::new(&cc)
            .args(flags)
            .args(&args)
            .arg("-o")
            .arg(out)
            .output()
            .with_context(|| format!("running {cc} (install gcc-riscv64-linux-gnu)"))?;
        if !o.status.success() {
            bail!(
                "{cc} for {} failed:\n{}",
                out.display(),
                String::from_utf8_lossy(&o.stderr)
            );
        }
        Ok(())
    };
    let c_files = |d: &Path| -> Result<Vec<std::ffi::OsString>> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(d)
            .with_context(|| format!("reading {}", d.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "c"))
            .collect();
        v.sort();
        Ok(v.into_iter().map(Into::into).collect())
    };
    let lua = dir.join("lua");
    if stale(&lua, "luadrv.c") {
        let lsrc = src[0].join("lua-5.5.1");
        let mut args: Vec<std::ffi::OsString> = vec!["-DLUA_USE_POSIX".into()];
        args.push(format!("-I{}", lsrc.display()).into());
        args.push(drivers.join("luadrv.c").into());
        args.extend(c_files(&lsrc)?);
        args.push("-lm".into());
        gcc(&lua, args)?;
    }
    let sqlite = dir.join("sqlite");
    if stale(&sqlite, "sqldrv.c") {
        let s = src[1].join("sqlite3");
        gcc(
            &sqlite,
            vec![
                "-DSQLITE_THREADSAFE=0".into(),
                "-DSQLITE_OMIT_LOAD_EXTENSION".into(),
                format!("-I{}", s.display()).into(),
                drivers.join("sqldrv.c").into(),
                s.join("sqlite3.c").into(),
            ],
        )?;
    }
    let zstd = dir.join("zstd");
    if stale(&zstd, "zstddrv.c") {
        let lib = src[2].join("zstd/lib");
        let mut args: Vec<std::ffi::OsString> = vec![
            "-DZSTD_DISABLE_ASM".into(),
            "-DZSTD_MULTITHREAD=0".into(),
            format!("-I{}", lib.display()).into(),
            drivers.join("zstddrv.c").into(),
        ];
        for sub in ["common", "compress", "decompress"] {
            args.extend(c_files(&lib.join(sub))?);
        }
        gcc(&zstd, args)?;
    }
    for f in ["fib.lua", "gc.lua"] {
        std::fs::copy(drivers.join(f), dir.join(f)).with_context(|| format!("copying {f}"))?;
    }
    // 1.8 MB of text to compress, the same wherever and whenever it is built: zstd 1.5.7's own
    // library sources (the pinned crate's), in a fixed order. (It was this repository's Rust
    // sources until 2026-11-27, which changed with every commit and moved the zstd rows.)
    let lib = src[2].join("zstd/lib");
    let mut files = Vec::new();
    for sub in ["common", "compress", "decompress"] {
        let d = lib.join(sub);
        for e in std::fs::read_dir(&d).with_context(|| format!("reading {}", d.display()))? {
            let p = e?.path();
            if p.extension().is_some_and(|e| e == "c" || e == "h") {
                files.push(p);
            }
        }
    }
    files.sort();
    let mut text = Vec::new();
    for p in files {
        text.extend(std::fs::read(&p)?);
    }
    std::fs::write(dir.join("input.txt"), text)?;
    Ok(RealPrograms { dir })
}

/// A studies manifest of real programs, built first: `(workload name, binary, arguments)`;
/// arguments that name files (a `.` in them) are the files it reads.
pub fn manifest(
    programs: &[(&str, &str, &[&str])],
    log: &mut (dyn std::io::Write + Send),
) -> Result<outcrop_studies::Manifest> {
    let built = build(None, log)?;
    let mut text = String::new();
    let list = |v: &[&str]| {
        v.iter()
            .map(|a| format!("{a:?}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    for (name, binary, args) in programs {
        let reads: Vec<&str> = args.iter().copied().filter(|a| a.contains('.')).collect();
        text.push_str(&format!(
            "[[workload]]\nname = \"{name}\"\nkind = \"compute\"\nbinary = \"{binary}\"\nargs = [{}]\nreads = [{}]\n\n",
            list(args),
            list(&reads)
        ));
    }
    outcrop_studies::Manifest::parse(&text, &built.dir).map_err(|e| crate::err!("{e}"))
}

/// The crates' source directories, in [`CRATES`] order, fetched by cargo.
fn sources(root: &Path) -> Result<Vec<PathBuf>> {
    let fetch = root.join("target/real-programs/fetch");
    std::fs::create_dir_all(fetch.join("src"))?;
    let mut manifest = String::from(
        "[package]\nname = \"real-programs-fetch\"\nversion = \"0.0.0\"\nedition = \"2021\"\npublish = false\n\n[workspace]\n\n[dependencies]\n",
    );
    for (name, version) in CRATES {
        manifest.push_str(&format!("{name} = \"={version}\"\n"));
    }
    std::fs::write(fetch.join("Cargo.toml"), manifest)?;
    std::fs::write(fetch.join("src/lib.rs"), "")?;
    let out = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args(["metadata", "--format-version", "1", "--manifest-path"])
        .arg(fetch.join("Cargo.toml"))
        .output()
        .context("running cargo metadata")?;
    if !out.status.success() {
        bail!(
            "cargo metadata (fetching {}) failed:\n{}",
            CRATES.map(|c| c.0).join(", "),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout)?;
    let packages = meta["packages"]
        .as_array()
        .context("cargo metadata: no packages")?;
    CRATES
        .iter()
        .map(|(name, version)| {
            let p = packages
                .iter()
                .find(|p| p["name"] == *name && p["version"] == *version)
                .with_context(|| format!("cargo metadata: no {name} {version}"))?;
            let m = p["manifest_path"].as_str().context("no manifest_path")?;
            Ok(Path::new(m)
                .parent()
                .context("manifest path")?
                .to_path_buf())
        })
        .collect()
}
