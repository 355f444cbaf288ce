//! The integration tests of `outcrop-outcrop`, one binary (one link) for all of them: each
//! module is one subject.

mod bolt;
mod browser;
mod cli;
mod cli_doc;
mod day_one;
mod diff;
mod dynamic;
mod exec;
mod hostile;
mod house;
mod import;
mod instrument;
mod layers;
mod names;
mod paths;
mod phases;
mod processes;
mod query_run;
mod run;
mod timeline;
mod util;
mod vector;
mod workloads;
mod wpp;
