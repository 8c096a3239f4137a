//! One module per subcommand, each with a `run` function that `main` calls with the parsed
//! arguments.

pub mod bench;
pub mod build;
pub mod copy;
pub mod demo;
pub mod explore;
pub mod info;
pub mod insert;
pub mod merge;
pub mod plot;
pub mod query;
pub mod remove;
pub mod rotate;
pub mod serve;
pub mod size;
