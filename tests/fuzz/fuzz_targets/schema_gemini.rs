#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| superpi_fuzz::schema::gemini(data));
