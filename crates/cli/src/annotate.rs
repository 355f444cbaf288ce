//! `outcrop annotate REPORT FUNCTION`: the files it reads (a report's `profile.json`, the
//! program, its source files), each with a bound, checked against each other.

use crate::files::{read_bounded, read_text_bounded, MAX_PROFILE_BYTES};
use crate::{refuse, Result};
use outcrop_report::annotate::{AnnotateInput, Annotation};
use outcrop_report::profile::PcTable;
use outcrop_run::mechanisms::profile::Counts;
use serde::Deserialize;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Largest source file read for its lines (bytes).
const MAX_SOURCE_BYTES: u64 = 16 << 20;

/// What `annotate` needs of `profile.json`.
#[derive(Deserialize)]
struct ProfileFile {
    program: String,
    #[serde(default)]
    program_id: Option<String>,
    instructions: u64,
    #[serde(default)]
    cycles: Option<u64>,
    functions: Vec<FunctionEntry>,
    #[serde(default)]
    pcs: Option<PcTable>,
}

#[derive(Deserialize)]
struct FunctionEntry {
    name: String,
    #[serde(default)]
    mangled: Option<String>,
    start: u64,
    size: u64,
}

/// What to annotate and with what.
pub struct AnnotateRequest<'a> {
    /// A report directory (`outcrop run --report DIR`) or its `profile.json`.
    pub report: &'a Path,
    /// The function: its name as the report shows it, its mangled name, or its name without
    /// a C++ parameter list or a compiler clone's suffix (`worker` for `worker(int, int)`,
    /// `msort` for `msort.part.0`).
    pub function: &'a str,
    /// The program, when not at the path the report names.
    pub binary: Option<&'a Path>,
    /// How to name code and where debug files are.
    pub naming: outcrop_run::objects::Naming,
}

/// The annotation `req` asks for.
pub fn annotate(req: &AnnotateRequest<'_>) -> Result<Annotation> {
    let file = if req.report.is_dir() {
        req.report.join("profile.json")
    } else {
        req.report.to_path_buf()
    };
    let text = read_text_bounded(&file, "profile", MAX_PROFILE_BYTES)?;
    let profile: ProfileFile = match serde_json::from_str(&text) {
        Ok(p) => p,
        Err(e) => refuse!(
            "{}: not an exact profile (profile.json of `outcrop run --report DIR`): {e}",
            file.display()
        ),
    };
    let Some(pcs) = &profile.pcs else {
        refuse!(
            "{}: no per-instruction counts (written by an older outcrop): run the program again",
            file.display()
        );
    };
    let f = find(&profile.functions, req.function, &file)?;
    if f.size == 0 || f.name.contains('@') {
        refuse!(
            "{}: its code is not in {} (a shared library's or unknown code): annotate reads the program's own functions",
            f.name,
            profile.program
        );
    }
    let binary = req
        .binary
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from(&profile.program));
    let bytes = read_bounded(&binary, "program", outcrop_run::files::MAX_PROGRAM_BYTES)?;
    let image =
        outcrop_run::ProgramImage::from_bytes(&binary, bytes)?.with_naming(req.naming.clone());
    if let Some(want) = &profile.program_id {
        let have = image.program_id()?;
        if have != want {
            refuse!(
                "{} is not the program the profile was made of ({have}, the profile says {want}): give it with --binary",
                binary.display()
            );
        }
    }
    let mut table = image.line_table().ok().flatten();
    let mut locate = |pc: u64| {
        let t = table.as_mut()?;
        let loc = t.locate(pc)?;
        Some((t.file_name(loc.file).to_string(), loc.line))
    };
    // a source path is named inside the program, as untrusted as the program: read only
    // beneath the working directory (an absolute path there too), race-free
    let root = std::env::current_dir().ok();
    let mut sources: HashMap<String, Option<Vec<String>>> = HashMap::new();
    let mut source = |file: &str, line: u32| {
        let lines = sources.entry(file.to_string()).or_insert_with(|| {
            let root = root.as_deref()?;
            let path = Path::new(file);
            let rel = path.strip_prefix(root).unwrap_or(path);
            let bytes =
                outcrop_run::files::read_beneath(root, rel, "source file", MAX_SOURCE_BYTES);
            let text = String::from_utf8(bytes.ok()?).ok()?;
            Some(text.lines().map(str::to_string).collect())
        });
        lines
            .as_ref()?
            .get((line as usize).checked_sub(1)?)
            .cloned()
    };
    let instruction = |pc: u64| image.instruction(pc);
    let function_at = |pc: u64| image.function(pc);
    let counts = pcs.counts();
    let run = Counts {
        instructions: profile.instructions,
        cycles: profile.cycles.unwrap_or(0),
        ..Counts::default()
    };
    Ok(Annotation::new(AnnotateInput {
        program: &profile.program,
        function: (&f.name, f.start, f.size),
        instruction: &instruction,
        function_at: &function_at,
        locate: &mut locate,
        source: &mut source,
        pcs: &counts,
        run,
        timed: profile.cycles.is_some(),
    }))
}

/// The function `name` names: by name, by mangled name, then by name without its parameter
/// list; an error lists the candidates when that is not one function.
fn find<'a>(functions: &'a [FunctionEntry], name: &str, file: &Path) -> Result<&'a FunctionEntry> {
    if let Some(f) = functions
        .iter()
        .find(|f| f.name == name || f.mangled.as_deref() == Some(name))
    {
        return Ok(f);
    }
    // `worker` for `worker(int, int)`, `msort` for GCC's clone `msort.part.0`
    let bare = |n: &str| {
        let n = outcrop_run::mechanisms::diff::profile::base_name(n);
        n.split_once('(').map_or(n, |(b, _)| b).to_string()
    };
    let matches: Vec<&FunctionEntry> = functions.iter().filter(|f| bare(&f.name) == name).collect();
    match matches.as_slice() {
        [f] => Ok(f),
        [] => {
            let hot: Vec<&str> = functions.iter().take(5).map(|f| f.name.as_str()).collect();
            refuse!(
                "no function `{name}` ran in {} (the hottest: {})",
                file.display(),
                hot.join(", ")
            )
        }
        many => {
            let names: Vec<&str> = many.iter().map(|f| f.name.as_str()).collect();
            refuse!(
                "`{name}` names {} functions: {}",
                many.len(),
                names.join("; ")
            )
        }
    }
}
