//! superpi-policy: placeholder; the crate owner replaces this file.
