//! A whole-program profile from its file, as `outcrop wpp report` makes it: the `.wpp` read
//! (bounded), its paths' and strata's execution counts, and, when the recorded program is
//! here (or named), its code for disassembly and every object it mapped for names (a
//! dynamically linked program's functions as `name@object`). Rendering is
//! `outcrop_report::wpp::WppReport::new`.

use crate::files::{read_bounded, MAX_PROFILE_BYTES, MAX_PROGRAM_BYTES};
use crate::paths::check_program;
use crate::{Error, ProgramImage, Result};
use outcrop_rv::symbols::Symbols;
use outcrop_strata::WppFile;
use std::path::{Path, PathBuf};

/// What to read.
#[derive(Clone, Debug, Default)]
pub struct WppInput {
    /// The `.wpp` file.
    pub file: PathBuf,
    /// The program; `None`: the recorded path, when it exists here.
    pub binary: Option<PathBuf>,
    /// Where the shared objects the run mapped are.
    pub sysroot: Option<PathBuf>,
    /// Read a profile of another build of the program, with a warning.
    pub ignore_program_id: bool,
}

/// A `.wpp` file with what its report needs.
pub struct WppAnalysis {
    /// Where it was read from.
    pub path: PathBuf,
    /// The file.
    pub file: WppFile,
    /// Executions of every path (index 0) and of every stratum layer's rules.
    pub counts: Vec<Vec<u64>>,
    /// The program, when it is here: disassembly and names.
    pub code: Option<ProgramImage>,
    /// Names across every object of a dynamically linked run (`None`: a static program, or
    /// no program).
    pub objects: Option<Symbols>,
}

/// Reads a `.wpp` file, bounded; an error names it.
pub fn read_profile(path: &Path) -> Result<WppFile> {
    let bytes = read_bounded(path, "profile", MAX_PROFILE_BYTES)?;
    WppFile::parse(&bytes).map_err(|e| Error::Config(format!("{}: {e}", path.display())))
}

impl WppAnalysis {
    /// Reads `input`; `warn` hears what a person should be told (a program without
    /// disassembly, another build let through).
    pub fn read(input: &WppInput, warn: &mut dyn FnMut(&str)) -> Result<WppAnalysis> {
        let file = read_profile(&input.file)?;
        let counts = file.executions();
        let run = &file.stats.run;
        let binary = input.binary.clone().or_else(|| {
            let p = PathBuf::from(&run.program);
            p.exists().then_some(p)
        });
        let code = match &binary {
            Some(p) => {
                let elf = read_bounded(p, "program", MAX_PROGRAM_BYTES)?;
                let ignore = input.ignore_program_id;
                check_program(&input.file, &run.program_id, p, &elf, ignore, warn)?;
                match ProgramImage::from_bytes(p, elf) {
                    Ok(c) => Some(c),
                    Err(e) => {
                        warn(&format!("no disassembly: {e}"));
                        None
                    }
                }
            }
            None => None,
        };
        // a dynamically linked program: every object it mapped, checked, names code in it
        let objects = match (&code, run.objects.is_empty()) {
            (Some(c), false) => {
                let recorded: Vec<crate::objects::Recorded<'_>> = run
                    .objects
                    .iter()
                    .map(crate::objects::Recorded::from)
                    .collect();
                let found = crate::objects::find_recorded(
                    &recorded,
                    input.sysroot.as_deref(),
                    input.ignore_program_id,
                    &mut |w| warn(&w),
                )?;
                Some(crate::objects::symbols_across(
                    c.symbols().ok(),
                    &found,
                    c.naming(),
                ))
            }
            _ => None,
        };
        Ok(WppAnalysis {
            path: input.file.clone(),
            file,
            counts,
            code,
            objects,
        })
    }

    /// The function holding `addr`: across the objects when the run mapped several, else
    /// the program's.
    pub fn function(&self, addr: u64) -> Option<String> {
        match (&self.objects, &self.code) {
            (Some(o), _) => o.lookup(addr).map(|f| f.to_string()),
            (None, Some(c)) => c.function(addr),
            (None, None) => None,
        }
    }
}

/// Every whole-program path of a `.wpp` file with its share of the instructions, blocks named
/// `function+0xoffset` when the recorded program is here (else by address), for
/// `outcrop diff`.
pub fn path_shares(path: &Path) -> Result<Vec<outcrop_diff::paths::PathIn>> {
    let file = read_profile(path)?;
    let counts = file.executions();
    let st = &file.stats;
    let program = PathBuf::from(&st.run.program);
    let symbols = match read_bounded(&program, "program", MAX_PROGRAM_BYTES) {
        Ok(elf)
            if outcrop_rv::elf::program_id(&elf).ok().as_deref()
                == Some(st.run.program_id.as_str()) =>
        {
            outcrop_rv::symbols::Symbols::from_elf(&elf).ok()
        }
        _ => None,
    };
    let name = |addr: u64| match symbols.as_ref().and_then(|s| s.lookup(addr)) {
        Some(f) => (
            f.name.to_string(),
            format!("{}+{:#x}", f.name, addr - f.start),
        ),
        None => (String::new(), format!("{addr:#x}")),
    };
    let hot = outcrop_strata::report::hot_paths(&file, &counts, usize::MAX);
    Ok(hot
        .into_iter()
        .map(|h| {
            let names: Vec<(String, String)> = h.blocks.iter().map(|&(a, _)| name(a)).collect();
            outcrop_diff::paths::PathIn {
                function: names.first().map(|n| n.0.clone()).unwrap_or_default(),
                blocks: names.into_iter().map(|n| n.1).collect(),
                share: h.share,
            }
        })
        .collect())
}
