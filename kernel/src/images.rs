//! Images of prompts: checked and stored once in the store (by SHA-256) when a prompt is
//! submitted, named by their digest in entries and events (a conversation's history stays
//! small however many screenshots it holds), and read back into each model request for a
//! model that takes them. In the store, not the data directory, so a kernel that continues a
//! conversation on a shared database has its images too.

use std::sync::Arc;

use sha2::{Digest as _, Sha256};
use superpi_proto::{ContentBlock, Message};
use superpi_providers::{ProvidersConfig, images};

use crate::store::Store;

/// The images of prompts, kept in the kernel's store.
#[derive(Clone)]
pub(crate) struct ImageStore {
    store: Arc<dyn Store>,
}

impl ImageStore {
    pub fn new(store: Arc<dyn Store>) -> Self {
        ImageStore { store }
    }

    /// Checks each image a prompt gives by its bytes (a format every vendor takes, read from
    /// the bytes; at most [`images::MAX_IMAGE_BYTES`]; a model that takes it) and stores it,
    /// leaving its digest in place of its bytes. The error is the client's to read.
    pub fn store_prompt(
        &self,
        model: &str,
        config: &ProvidersConfig,
        content: &mut [ContentBlock],
    ) -> Result<(), String> {
        for block in content.iter_mut() {
            let ContentBlock::Image { media_type, data, sha256 } = block else { continue };
            let Some(encoded) = data.take() else {
                return Err("an image needs its bytes in `data` (base64)".into());
            };
            let bytes = images::decode(&encoded)?;
            if bytes.len() > images::MAX_IMAGE_BYTES {
                return Err(format!(
                    "the image is {} bytes; at most {} are taken (5 MiB)",
                    bytes.len(),
                    images::MAX_IMAGE_BYTES
                ));
            }
            let Some(found) = images::media_type_of(&bytes) else {
                return Err(format!("the image (declared {media_type}) is not a PNG, JPEG, GIF or WebP image"));
            };
            if let Some(why) = images::refusal(model, found, config) {
                return Err(why);
            }
            let digest = format!("{:x}", Sha256::digest(&bytes));
            self.store
                .put_image(&digest, found, &bytes)
                .map_err(|err| format!("the image could not be stored: {err}"))?;
            *media_type = found.to_string();
            *sha256 = Some(digest);
        }
        Ok(())
    }

    /// The messages of a model request with their images' bytes, for `model`: an image that
    /// model does not take (the conversation switched models) becomes a line saying so; one
    /// the store does not have keeps no data (the vendor modules send a line saying so).
    pub fn attach(&self, model: &str, config: &ProvidersConfig, messages: &mut [Message]) {
        for message in messages.iter_mut() {
            for block in message.content.iter_mut() {
                let ContentBlock::Image { media_type, data, sha256: Some(sha256) } = block else { continue };
                if data.is_some() {
                    continue;
                }
                if images::refusal(model, media_type, config).is_some() {
                    *block =
                        ContentBlock::text(format!("[an image ({media_type}) that model `{model}` does not take]"));
                    continue;
                }
                match self.store.image(sha256) {
                    Ok(Some(bytes)) => *data = Some(images::encode(&bytes)),
                    Ok(None) => tracing::warn!(%sha256, "an image names no stored image"),
                    Err(err) => tracing::warn!(%sha256, %err, "a stored image could not be read"),
                }
            }
        }
    }
}

#[cfg(test)]
#[path = "images_tests.rs"]
mod tests;
