//! RedisBloom's `BF.*` and `CF.*` commands over bloomkit's filters, for any host.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod args;
pub mod bloom;
mod budget;
mod command;
pub mod cuckoo;
mod dump;
pub mod errors;
mod limits;
pub mod params;
pub mod reply;
mod run;
mod shared;
pub mod table;
pub mod value;

pub use budget::{Budget, Unlimited};
pub use command::FilterCommand;
pub use params::{Defaults, Parameter, PARAMETERS};
pub use reply::{Protocol, Reply};
pub use run::{Access, Ctx, Outcome};
pub use value::{PartialDump, Value};
