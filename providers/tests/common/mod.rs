//! The crate's replay server, with panicking shorthands for tests.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, reason = "test support code")]

pub use superpi_providers::testing::{Recorded, Reply};

pub fn recorded(name: &str) -> Vec<u8> {
    superpi_providers::testing::recorded(name).unwrap()
}

pub struct ReplayServer(pub superpi_providers::testing::ReplayServer);

impl std::ops::Deref for ReplayServer {
    type Target = superpi_providers::testing::ReplayServer;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl ReplayServer {
    pub async fn start(replies: Vec<Reply>) -> Self {
        ReplayServer(superpi_providers::testing::ReplayServer::start(replies).await.unwrap())
    }
}

pub trait JsonBody {
    fn body_json(&self) -> serde_json::Value;
}

impl JsonBody for Recorded {
    fn body_json(&self) -> serde_json::Value {
        Recorded::json(self).expect("the request body is JSON")
    }
}
