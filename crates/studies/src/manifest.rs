//! The bundled workloads, written once (`workloads/manifest.toml`), and how a job runs one:
//! [`Manifest::spec`] gives the `ProgramSpec` of a workload in a scratch directory of its own.

use crate::{Error, Result};
use outcrop_run::ProgramSpec;
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// The most bytes of a manifest file read.
const MAX_MANIFEST_BYTES: u64 = 1 << 20;

/// The most bytes of one workload input copied into a job's scratch directory.
const MAX_INPUT_BYTES: u64 = 1 << 30;

/// Absolute sysroots a manifest may name: the cross toolchains' own (Debian's
/// `libc6-dev-riscv64-cross`), which hold a libc and its loader and nothing of the user's. Any
/// other sysroot in a manifest must lie inside the manifest's directory: a checkout must not
/// widen the guest's sandbox (a sysroot is granted read-only as the guest's `/`).
pub const SYSTEM_SYSROOTS: &[&str] = &["/usr/riscv64-linux-gnu"];

/// What a workload is for.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// A program that computes something (the studies' set).
    Compute,
    /// A micro-benchmark that validates the timing model.
    Micro,
    /// Start-up only (`hello`, `exitcode`).
    Startup,
    /// Multi-threaded (the scheduler and the per-thread mechanisms; not in the studies' set
    /// until whole-program paths record threads apart, docs/machine.md "Threads").
    Threads,
    /// A compute workload built for other ISA extensions (`lz_zb`: Zba, Zbb, Zbs): the
    /// machine's decoder and engines on real compiler output, checked against qemu; not in
    /// the studies' set (its program is the same as the one it is built from).
    Isa,
    /// A compute workload dynamically linked (`strsearch_dyn`): the dynamic linker, file
    /// mappings and every mechanism across objects; needs its `sysroot`.
    Dynamic,
}

/// One workload.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Workload {
    /// Its name (unique in the manifest).
    pub name: String,
    /// What it is for.
    pub kind: Kind,
    /// The program, relative to the manifest's directory (default `bin/NAME`).
    #[serde(default)]
    pub binary: Option<PathBuf>,
    /// Its arguments after `argv[0]`.
    #[serde(default)]
    pub args: Vec<String>,
    /// Files it reads, relative to the manifest's directory.
    #[serde(default)]
    pub reads: Vec<PathBuf>,
    /// Whether it writes next to its inputs (in its working directory).
    #[serde(default)]
    pub writes: bool,
    /// Where a dynamically linked program's libraries are (`--sysroot`).
    #[serde(default)]
    pub sysroot: Option<PathBuf>,
}

impl Workload {
    /// The program's path relative to the manifest's directory.
    pub fn binary(&self) -> PathBuf {
        self.binary
            .clone()
            .unwrap_or_else(|| Path::new("bin").join(&self.name))
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    workload: Vec<Workload>,
}

/// The workloads of a directory and where they live.
#[derive(Clone, Debug)]
pub struct Manifest {
    /// The directory the manifest's paths are relative to (absolute).
    pub root: PathBuf,
    /// The workloads, in the file's order.
    pub workloads: Vec<Workload>,
}

impl Manifest {
    /// Reads `DIR/manifest.toml` (bounded).
    pub fn load(dir: &Path) -> Result<Manifest> {
        let path = dir.join("manifest.toml");
        let bytes = outcrop_run::files::read_bounded(&path, "manifest", MAX_MANIFEST_BYTES)?;
        let text = String::from_utf8(bytes).map_err(|_| Error::Manifest {
            path: path.clone(),
            detail: "not UTF-8".into(),
        })?;
        let root = std::path::absolute(dir).map_err(|e| Error::io(dir, e))?;
        Manifest::parse(&text, &root).map_err(|detail| Error::Manifest { path, detail })
    }

    /// The manifest `text`, its paths relative to `root`. Errors: TOML errors with their
    /// line, duplicate names, paths that leave `root`.
    pub fn parse(text: &str, root: &Path) -> std::result::Result<Manifest, String> {
        let file: File = toml::from_str(text).map_err(|e| e.to_string())?;
        let mut seen = std::collections::BTreeSet::new();
        for w in &file.workload {
            if !seen.insert(w.name.as_str()) {
                return Err(format!("workload `{}` is listed twice", w.name));
            }
            let inside = |p: &Path| {
                p.is_relative()
                    && p.components()
                        .all(|c| matches!(c, std::path::Component::Normal(_)))
            };
            if w.name.is_empty() || !inside(Path::new(&w.name)) {
                return Err(format!("workload name `{}` is not a plain name", w.name));
            }
            if let Some(root) = &w.sysroot {
                let system = SYSTEM_SYSROOTS.iter().any(|s| Path::new(s) == root);
                if !system && !inside(root) {
                    return Err(format!(
                        "workload `{}`: sysroot {} must be a directory inside the manifest's directory or one of the cross toolchains' own ({}); a sysroot is granted to the guest as its `/`, so give any other with --sysroot on the command line",
                        w.name,
                        root.display(),
                        SYSTEM_SYSROOTS.join(", ")
                    ));
                }
            }
            for p in w.binary.iter().chain(&w.reads) {
                if !inside(p) {
                    return Err(format!(
                        "workload `{}`: {} must be a path inside the manifest's directory",
                        w.name,
                        p.display()
                    ));
                }
            }
        }
        Ok(Manifest {
            root: root.to_path_buf(),
            workloads: file.workload,
        })
    }

    /// The workload `name`.
    pub fn get(&self, name: &str) -> Result<&Workload> {
        self.workloads
            .iter()
            .find(|w| w.name == name)
            .ok_or_else(|| Error::UnknownWorkload(name.to_string()))
    }

    /// The compute workloads (the studies' default set), in the file's order.
    pub fn compute(&self) -> impl Iterator<Item = &Workload> {
        self.workloads.iter().filter(|w| w.kind == Kind::Compute)
    }

    /// The named workloads (an error names the first unknown one), or the compute set when
    /// `names` is empty.
    pub fn select(&self, names: &[String]) -> Result<Vec<&Workload>> {
        if names.is_empty() {
            return Ok(self.compute().collect());
        }
        names.iter().map(|n| self.get(n)).collect()
    }

    /// Where workload `w`'s program is: its real path, resolved beneath the manifest's
    /// directory (a symlink in the checkout that leads out of it is refused).
    pub fn binary_path(&self, w: &Workload) -> Result<PathBuf> {
        Ok(outcrop_run::files::resolve_beneath(
            &self.root,
            &w.binary(),
            "program",
        )?)
    }

    /// Workload `w`'s sysroot: one of [`SYSTEM_SYSROOTS`] as named, or a directory inside the
    /// manifest's directory by its real path (resolved beneath it, race-free: a symlink that
    /// leads out is refused).
    pub fn sysroot(&self, w: &Workload) -> Result<Option<PathBuf>> {
        match &w.sysroot {
            None => Ok(None),
            Some(p) if SYSTEM_SYSROOTS.iter().any(|s| Path::new(s) == p) => Ok(Some(p.clone())),
            Some(p) => Ok(Some(outcrop_run::files::resolve_beneath(
                &self.root, p, "sysroot",
            )?)),
        }
    }

    /// How a job runs workload `name` with `scratch` as its working directory: the program
    /// by absolute path, seen by the guest as `bin/NAME`; its inputs copied into `scratch`
    /// (which is granted read-write when it writes, its inputs read-only otherwise);
    /// deterministic, quiet, 1 GiB of memory. Every path comes from the manifest, so each is
    /// resolved beneath the manifest's directory.
    pub fn spec(&self, name: &str, scratch: &Path) -> Result<ProgramSpec> {
        let w = self.get(name)?;
        let binary = self.binary_path(w)?;
        let mut spec = ProgramSpec::observed(&binary, &w.binary().to_string_lossy());
        spec.command
            .extend(w.args.iter().map(std::ffi::OsString::from));
        spec.cwd = Some(scratch.to_path_buf());
        for r in &w.reads {
            let to = scratch.join(r);
            if let Some(parent) = to.parent() {
                std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
            }
            let bytes =
                outcrop_run::files::read_beneath(&self.root, r, "workload input", MAX_INPUT_BYTES)?;
            std::fs::write(&to, bytes).map_err(|e| Error::io(&to, e))?;
            if !w.writes {
                spec.allow.push(to);
            }
        }
        if w.writes {
            spec.allow_rw.push(scratch.to_path_buf());
        }
        spec.sysroot = self.sysroot(w)?;
        Ok(spec)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bundled_manifest_names_every_program_in_bin() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../workloads");
        let m = Manifest::load(&dir).unwrap();
        let mut bins: Vec<String> = std::fs::read_dir(dir.join("bin"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| !n.contains('.') && n != "TOOLCHAIN")
            .collect();
        bins.sort();
        let mut names: Vec<String> = m.workloads.iter().map(|w| w.name.clone()).collect();
        names.sort();
        assert_eq!(bins, names);
        assert_eq!(m.get("fileio").unwrap().args, vec!["src/fileio.c"]);
        assert!(m.compute().all(|w| !w.name.starts_with("micro_")));
    }

    #[test]
    fn bad_manifests_say_what_is_wrong() {
        let root = Path::new("/w");
        let e = Manifest::parse("[[workload]]\nname = \"a\"\nkind = \"compute\"\n[[workload]]\nname = \"a\"\nkind = \"micro\"\n", root).unwrap_err();
        assert!(e.contains("twice"), "{e}");
        let e = Manifest::parse("[[workload]]\nname = \"a\"\nkind = \"fast\"\n", root).unwrap_err();
        assert!(e.contains("line 3") || e.contains("fast"), "{e}");
        let e = Manifest::parse(
            "[[workload]]\nname = \"a\"\nkind = \"compute\"\nreads = [\"../etc/passwd\"]\n",
            root,
        )
        .unwrap_err();
        assert!(e.contains("inside"), "{e}");
        let e = Manifest::parse("[[workload]]\nname = \"../x\"\nkind = \"compute\"\n", root)
            .unwrap_err();
        assert!(e.contains("plain name"), "{e}");
        assert!(Manifest::parse(
            "[[workload]]\nname = \"a\"\nkind = \"compute\"\nspeed = 1\n",
            root
        )
        .is_err());
    }

    /// A checkout cannot widen the sandbox: a sysroot outside the manifest's directory (`/`,
    /// `../..`) is refused when the manifest is read, and a symlink planted in the checkout
    /// that leads out is refused when a job resolves it (as a sysroot, a program or an input).
    #[test]
    fn paths_in_a_manifest_stay_beneath_its_directory() {
        let root = Path::new("/nowhere");
        for sysroot in ["/", "../..", "/etc", "/usr/riscv64-linux-gnu/../.."] {
            let text = format!(
                "[[workload]]\nname = \"a\"\nkind = \"dynamic\"\nsysroot = \"{sysroot}\"\n"
            );
            let e = Manifest::parse(&text, root).unwrap_err();
            assert!(e.contains("sysroot"), "{sysroot}: {e}");
        }
        let ok = "[[workload]]\nname = \"a\"\nkind = \"dynamic\"\nsysroot = \"/usr/riscv64-linux-gnu\"\n";
        assert!(Manifest::parse(ok, root).is_ok());

        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir_all(d.join("bin")).unwrap();
        std::fs::create_dir_all(d.join("sys/lib")).unwrap();
        std::os::unix::fs::symlink("/", d.join("root")).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", d.join("secret")).unwrap();
        std::os::unix::fs::symlink("/bin/true", d.join("bin/a")).unwrap();
        std::fs::write(d.join("data"), "fine").unwrap();
        let text = "[[workload]]\nname = \"a\"\nkind = \"dynamic\"\nsysroot = \"root\"\nreads = [\"secret\"]\n";
        let m = Manifest::parse(text, d).unwrap();
        let w = m.get("a").unwrap();
        let e = m.sysroot(w).unwrap_err().to_string();
        assert!(e.contains("leads out"), "{e}");
        let e = m.binary_path(w).unwrap_err().to_string();
        assert!(e.contains("leads out"), "{e}");
        let scratch = tempfile::tempdir().unwrap();
        let e = m.spec("a", scratch.path()).unwrap_err().to_string();
        assert!(e.contains("leads out"), "{e}");
        // inside the checkout, by real path
        let text = "[[workload]]\nname = \"a\"\nkind = \"dynamic\"\nsysroot = \"sys\"\nreads = [\"data\"]\nbinary = \"data\"\n";
        let m = Manifest::parse(text, d).unwrap();
        let w = m.get("a").unwrap();
        let real = std::fs::canonicalize(d.join("sys")).unwrap();
        assert_eq!(m.sysroot(w).unwrap(), Some(real));
        let spec = m.spec("a", scratch.path()).unwrap();
        assert_eq!(
            std::fs::read_to_string(scratch.path().join("data")).unwrap(),
            "fine"
        );
        assert_eq!(
            spec.sysroot,
            Some(std::fs::canonicalize(d.join("sys")).unwrap())
        );
    }
}
