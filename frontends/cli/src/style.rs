//! Terminal styles and the "waiting" spinner. Styles go through anstream, which drops them
//! when the stream is not a terminal or `NO_COLOR` is set (and keeps them for
//! `CLICOLOR_FORCE`).

use std::io::{IsTerminal, Write};

use anstyle::{AnsiColor, Style};

/// What a line of activity is, so the terminal can colour it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tone {
    /// A tool starts.
    Tool,
    /// A tool finished.
    Done,
    /// A tool failed or was blocked.
    Failed,
    /// A question for the person at the terminal.
    Ask,
    /// Notices, retries, cancellation.
    Info,
    /// The turn failed.
    Error,
}

pub fn style(tone: Tone) -> Style {
    match tone {
        Tone::Tool => AnsiColor::Cyan.on_default(),
        Tone::Done => AnsiColor::Green.on_default(),
        Tone::Failed => AnsiColor::Red.on_default(),
        Tone::Ask => AnsiColor::Yellow.on_default().bold(),
        Tone::Info => Style::new().dimmed(),
        Tone::Error => AnsiColor::Red.on_default().bold(),
    }
}

/// Whether stdout shows styles: a terminal, and colours not turned off (`NO_COLOR`). Where it
/// does not, text goes out as written (the answer's markdown unrendered).
pub fn styles_stdout() -> bool {
    let stdout = std::io::stdout();
    stdout.is_terminal() && anstream::AutoStream::choice(&stdout) != anstream::ColorChoice::Never
}

/// `text` in `style` (anstream strips the codes where colours are off).
pub fn paint(style: Style, text: &str) -> String {
    format!("{style}{text}{style:#}")
}

/// A column header.
pub fn header(text: &str) -> String {
    paint(Style::new().bold(), text)
}

const FRAMES: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

/// "Waiting for the model" on stderr, only when stderr is a terminal. `tick` draws the next
/// frame; `clear` removes it before anything else is printed.
#[derive(Debug)]
pub struct Spinner {
    enabled: bool,
    frame: usize,
    shown: bool,
}

impl Spinner {
    pub fn new(wanted: bool) -> Self {
        Spinner { enabled: wanted && std::io::stderr().is_terminal(), frame: 0, shown: false }
    }

    pub fn enabled(&self) -> bool {
        self.enabled
    }

    pub fn tick(&mut self) {
        if !self.enabled {
            return;
        }
        self.frame = (self.frame + 1) % FRAMES.len();
        let line = paint(Style::new().dimmed(), &format!("{} working", FRAMES[self.frame]));
        let mut err = anstream::stderr().lock();
        let _ = write!(err, "\r{line}");
        let _ = err.flush();
        self.shown = true;
    }

    pub fn clear(&mut self) {
        if self.shown {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[K");
            let _ = err.flush();
            self.shown = false;
        }
    }
}
