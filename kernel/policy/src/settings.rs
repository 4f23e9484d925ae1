//! Settings (placeholder, filled in below).
use crate::mode::Mode;

#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    pub remote: RemoteSettings,
}

#[derive(Debug, Clone, PartialEq)]
pub struct RemoteSettings {
    pub default_mode: Mode,
    pub max_mode: Mode,
}

impl Default for Settings {
    fn default() -> Self {
        Settings { remote: RemoteSettings { default_mode: Mode::AcceptEdits, max_mode: Mode::AcceptEdits } }
    }
}
