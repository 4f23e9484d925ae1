//! How the command line reaches the kernel: the connect options of each role it starts (named
//! by its frontend), and a connection whose error says what failed.

use anyhow::Context;
use superpi_client::{ConnectOptions, KernelClient, Locations};

pub(crate) fn connect_options(locations: &Locations, frontend: &str) -> ConnectOptions {
    ConnectOptions::new(locations.clone(), frontend)
}

pub(crate) async fn connect(locations: &Locations, frontend: &str) -> anyhow::Result<KernelClient> {
    KernelClient::connect(&connect_options(locations, frontend)).await.context("connecting to the kernel")
}
