//! The bundled workloads, written once (`workloads/manifest.toml`), and how a job runs one:
//! [`Manifest::spec`] gives the `ProgramSpec` of a workload in a scratch directory of its own.

use crate::{Error, Result};
use outcrop_run::ProgramSpec;
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// The most bytes of a manifest file read.
const MAX_MANIFEST_BYTES: u64 = 1 << 20;

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

    /// How a job runs workload `name` with `scratch` as its working directory: the program
    /// by absolute path, seen by the guest as `bin/NAME`; its inputs copied into `scratch`
    /// (which is granted read-write when it writes, its inputs read-only otherwise);
    /// deterministic, quiet, 1 GiB of memory.
    pub fn spec(&self, name: &str, scratch: &Path) -> Result<ProgramSpec> {
        let w = self.get(name)?;
        let binary = self.root.join(w.binary());
        let mut spec = ProgramSpec::observed(&binary, &w.binary().to_string_lossy());
        spec.command
            .extend(w.args.iter().map(std::ffi::OsString::from));
        spec.cwd = Some(scratch.to_path_buf());
        for r in &w.reads {
            let to = scratch.join(r);
            if let Some(parent) = to.parent() {
                std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
            }
            let from = self.root.join(r);
            std::fs::copy(&from, &to).map_err(|e| Error::io(&from, e))?;
            if !w.writes {
                spec.allow.push(to);
            }
        }
        if w.writes {
            spec.allow_rw.push(scratch.to_path_buf());
        }
        spec.sysroot = w.sysroot.clone();
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
}
