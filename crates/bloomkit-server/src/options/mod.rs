//! Every option of `bloomkit serve`, each written once: one table from which the flags, the
//! config file, `CONFIG GET|SET|REWRITE`, `INFO` and docs/SERVER.md's flag table all come.
//!
//! Two tables hold the rows: the server's own ([`table::OPTIONS`]: `bind`, `maxmemory`,
//! `maxmemory-policy`...), and the command layer's `bf-*`/`cf-*` parameters
//! ([`bloomkit_commands::PARAMETERS`]: their names, defaults and ranges are the command
//! layer's facts). A [`Directive`] is a row of either, and everything that takes an option
//! goes through it:
//!
//! * every row is a start-up flag, `--name value` (redis-server's convention:
//!   `bloomkit serve --maxmemory-policy allkeys-lru`), which the CLI builds from
//!   [`Directive::flags`], and [`crate::config::Config::resolve`] reads;
//! * every row but the flag-only ones (`--config`, `--threads`, `--requirepass-file`) is a
//!   config file directive ([`crate::config_file`]), checked by the same [`Directive::check`];
//! * `CONFIG GET` answers the rows that have a value to show, `CONFIG SET` changes the
//!   run-time ones and refuses the others as immutable, `CONFIG REWRITE` writes their running
//!   values ([`crate::config::Settings`]);
//! * `INFO` shows the rows that name a field ([`info_fields`]);
//! * docs/SERVER.md's flag table is [`flag_table`], which a test compares with the page.

mod parse;
mod runtime;
pub mod table;

use bloomkit_commands::params::{Number, Parameter};
use bloomkit_commands::PARAMETERS;

pub use parse::{parse_memory, DebugCommand};
pub use runtime::{Options, OutputLimit, DEFAULT_QUERY_BUFFER_LIMIT};
pub use table::{OptionRow, Role, OPTIONS};

use crate::config::{Config, Settings};
use crate::keyspace::Keyspace;

/// What an option's current value is read from.
#[derive(Clone, Copy)]
pub struct View<'a> {
    /// The start-up options.
    pub config: &'a Config,
    /// The run-time settings.
    pub settings: &'a Settings,
    /// The keyspace (`maxmemory` and the eviction settings live there).
    pub keyspace: &'a Keyspace,
}

/// One option: a row of the server's table or of the command layer's parameters.
#[derive(Clone, Copy, Debug)]
pub enum Directive {
    /// A `bf-*`/`cf-*` parameter: a default for keys created implicitly, changed at run time.
    Filter(&'static Parameter),
    /// One of the server's options.
    Server(&'static OptionRow),
}

impl Directive {
    /// Every option, in the order `CONFIG GET` lists them: the filter parameters, then the
    /// server's.
    pub fn all() -> impl Iterator<Item = Directive> {
        PARAMETERS
            .iter()
            .map(Directive::Filter)
            .chain(OPTIONS.iter().map(Directive::Server))
    }

    /// Every option in the order `--help` and the docs' table list them: the server's, then
    /// the filter parameters.
    pub fn flags() -> impl Iterator<Item = Directive> {
        OPTIONS
            .iter()
            .map(Directive::Server)
            .chain(PARAMETERS.iter().map(Directive::Filter))
    }

    /// The option named `name` (any case).
    pub fn find(name: &[u8]) -> Option<Directive> {
        Directive::all().find(|d| d.name().as_bytes().eq_ignore_ascii_case(name))
    }

    /// Its name: the directive's, and the flag's after `--`.
    pub fn name(self) -> &'static str {
        match self {
            Directive::Filter(p) => p.name,
            Directive::Server(row) => row.name,
        }
    }

    /// Whether a config file and `CONFIG SET` know it (all but the flag-only rows).
    pub fn is_directive(self) -> bool {
        !matches!(
            self,
            Directive::Server(OptionRow {
                role: Role::FlagOnly,
                ..
            })
        )
    }

    /// Whether `CONFIG SET` changes it.
    pub fn is_runtime(self) -> bool {
        matches!(
            self,
            Directive::Filter(_)
                | Directive::Server(OptionRow {
                    role: Role::Runtime { .. },
                    ..
                })
        )
    }

    /// Checks a value: the reason it is refused, in `CONFIG SET`'s words.
    ///
    /// # Errors
    ///
    /// The reason, for a value the option cannot take.
    pub fn check(self, value: &[u8]) -> Result<(), String> {
        match self {
            Directive::Filter(p) => p.parse(value).map(|_| ()).map_err(|e| e.to_string()),
            Directive::Server(row) => (row.check)(value),
        }
    }

    /// What `CONFIG GET` answers for it now; `None` for an option it does not answer.
    pub fn get(self, view: &View<'_>) -> Option<String> {
        match self {
            Directive::Filter(p) => Some(p.get(&view.settings.defaults()).to_string()),
            Directive::Server(row) => row.get.map(|get| get(view)),
        }
    }

    /// Its value until it is set, as `CONFIG GET` answers it on a fresh server.
    pub fn default_value(self) -> String {
        match self {
            Directive::Filter(p) => p.default.to_string(),
            Directive::Server(row) => row.default.to_string(),
        }
    }

    /// What its value is called in `--help` (`POLICY`, `N`, `classic|blocked`).
    pub fn value_name(self) -> String {
        match self {
            Directive::Filter(p) if !p.choices.is_empty() => p.choices.join("|"),
            Directive::Filter(Parameter {
                default: Number::Float(_),
                ..
            }) => "X".to_string(),
            Directive::Filter(_) => "N".to_string(),
            Directive::Server(row) => row.value_name.to_string(),
        }
    }

    /// What a valid value is: `'x' is not <this>`.
    pub fn accepts(self) -> String {
        match self {
            Directive::Filter(p) if !p.choices.is_empty() => {
                format!("one of {}", p.choices.join(", "))
            }
            Directive::Filter(p) => match (p.min, p.max) {
                (Number::Float(min), Number::Float(max)) => {
                    format!("a number between {min} and {max} exclusive")
                }
                (min, max) => format!("an integer from {min} to {max}"),
            },
            Directive::Server(row) => row.accepts.to_string(),
        }
    }

    /// One line of help.
    pub fn help(self) -> String {
        match self {
            Directive::Filter(p) => format!(
                "the `{}` of a filter a command creates without its `RESERVE` (`{}.ADD` on a missing key): {}",
                p.name,
                p.name.get(..2).unwrap_or_default().to_ascii_uppercase(),
                self.accepts()
            ),
            Directive::Server(row) => row.help.to_string(),
        }
    }

    /// The environment variable that gives the flag's value, if any.
    pub fn env(self) -> Option<&'static str> {
        match self {
            Directive::Filter(_) => None,
            Directive::Server(row) => row.env,
        }
    }
}

/// The `INFO` fields of `section` that show options, with their values now, in the table's
/// order.
pub fn info_fields(section: &str, view: &View<'_>) -> Vec<(&'static str, String)> {
    OPTIONS
        .iter()
        .filter_map(|row| {
            let (in_section, field) = row.info?;
            let get = row.get?;
            (in_section == section).then(|| (field, get(view)))
        })
        .collect()
}

/// docs/SERVER.md's flag table, in Markdown: one line per option, in [`Directive::flags`]
/// order.
pub fn flag_table() -> String {
    let escape = |text: &str| text.replace('|', "\\|");
    let mut out = String::from("| flag | default | `CONFIG SET` | meaning |\n|---|---|---|---|\n");
    for directive in Directive::flags() {
        let default = directive.default_value();
        let default = if default.is_empty() {
            "none".to_string()
        } else {
            format!("`{}`", escape(&default))
        };
        let settable = if directive.is_runtime() { "yes" } else { "no" };
        let mut meaning = directive.help();
        if let Some(env) = directive.env() {
            meaning.push_str(&format!("; the environment: `{env}`"));
        }
        if !directive.is_directive() {
            meaning.push_str("; a flag only, not a config file directive");
        }
        out.push_str(&format!(
            "| `--{} {}` | {default} | {settable} | {} |\n",
            directive.name(),
            escape(&directive.value_name()),
            escape(&meaning)
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_across_both_tables() {
        let mut names: Vec<&str> = Directive::all().map(Directive::name).collect();
        let count = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), count, "a name in both tables");
        assert_eq!(Directive::flags().count(), count);
    }

    #[test]
    fn every_default_is_a_value_the_option_takes() {
        for directive in Directive::all() {
            let default = directive.default_value();
            if !default.is_empty() {
                assert_eq!(
                    directive.check(default.as_bytes()),
                    Ok(()),
                    "{}",
                    directive.name()
                );
            }
        }
    }

    #[test]
    fn every_default_is_what_a_fresh_server_answers() {
        let (config, settings, keyspace) =
            (Config::default(), Settings::default(), Keyspace::new(0));
        let view = View {
            config: &config,
            settings: &settings,
            keyspace: &keyspace,
        };
        for directive in Directive::all() {
            // The log's options read the process's log, which tests do not start; whether
            // the log is on depends on the journal, which a bare keyspace has none of.
            if ["loglevel", "logfile", "appendonly"].contains(&directive.name()) {
                continue;
            }
            if let Some(value) = directive.get(&view) {
                assert_eq!(value, directive.default_value(), "{}", directive.name());
            }
        }
        assert_eq!(
            crate::log::Level::Notice.name(),
            Directive::find(b"loglevel").unwrap().default_value()
        );
    }

    #[test]
    fn values_are_checked_by_their_row() {
        let check = |name: &str, value: &str| {
            Directive::find(name.as_bytes())
                .unwrap()
                .check(value.as_bytes())
        };
        assert!(check("maxmemory-policy", "lru")
            .unwrap_err()
            .starts_with("argument(s) must be one of the following: volatile-lru, allkeys-lru"));
        assert!(check("client-query-buffer-limit", "1000").is_err());
        assert_eq!(check("client-query-buffer-limit", "2mb"), Ok(()));
        assert!(check("slowlog-max-len", "x").is_err());
        assert_eq!(
            check("cf-bucket-size", "256"),
            Err("argument must be between 1 and 255 inclusive".to_string())
        );
        for bad in ["normal 1mb", "clients 1 1 1", "normal lots 1 1", ""] {
            assert!(check("client-output-buffer-limit", bad).is_err(), "{bad}");
        }
        assert_eq!(
            check("protected-mode", "maybe"),
            Err("'maybe' is not yes or no".into())
        );
        assert!(check("bind", "127.0.0.1 ::1").is_err());
    }

    #[test]
    fn the_flag_table_has_a_line_per_option() {
        let table = flag_table();
        assert_eq!(table.lines().count(), 2 + Directive::all().count());
        assert!(table.contains("| `--maxmemory-policy POLICY` | `noeviction` | yes |"));
        assert!(table.contains("| `--port N` | `6379` | no |"));
        assert!(table.contains("| `--bf-layout classic\\|blocked` | `classic` | yes |"));
        assert!(table.contains("the environment: `BLOOMKIT_REQUIREPASS`"));
    }
}
