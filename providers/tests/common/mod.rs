//! The crate's fake vendor servers, with panicking shorthands for tests.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, reason = "test support code")]

pub use superpi_providers::testing::answers::Answer;
pub use superpi_providers::testing::fakes::FakeServer;
pub use superpi_providers::testing::rules::Vendor;
pub use superpi_providers::testing::{Recorded, Reply};

pub fn recorded(name: &str) -> Vec<u8> {
    superpi_providers::testing::recorded(name).unwrap()
}

/// A fake of all three vendors (and OpenAI's Responses API) that answers valid requests with `replies`, in order. Every
/// request must pass its vendor's rules: a refused one fails the test when the fake is dropped.
pub struct Fake(pub FakeServer);

impl std::ops::Deref for Fake {
    type Target = FakeServer;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl Fake {
    pub async fn start(replies: Vec<Reply>) -> Self {
        let script = replies.into_iter().map(Answer::Reply).collect();
        Fake(
            FakeServer::start(&[Vendor::Openai, Vendor::OpenaiResponses, Vendor::Anthropic, Vendor::Gemini], script)
                .await
                .unwrap(),
        )
    }
}

impl Drop for Fake {
    fn drop(&mut self) {
        let rejections = self.0.rejections();
        if !std::thread::panicking() {
            assert!(rejections.is_empty(), "the fake refused requests the real API would refuse: {rejections:#?}");
        }
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
