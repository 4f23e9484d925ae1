//! The rmcp [`ServerHandler`] of [`SuperpiMcp`]: MCP requests onto the server's kernel
//! methods. A child of `request`, so it reaches the handler's private state.
#![allow(deprecated)] // MCP logging (setLevel) is deprecated only from protocol 2026-07-28 on

use std::borrow::Cow;

use rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResponse, CancelTaskParams, CustomRequest, CustomResult, ErrorCode,
    GetPromptRequestParams, GetPromptResponse, GetTaskParams, GetTaskResult, Implementation, InitializeRequestParams,
    InitializeResult, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, PromptsCapability, ProtocolVersion, ReadResourceRequestParams, ReadResourceResponse,
    ResourcesCapability, ServerCapabilities, ServerConfig, SetLevelRequestParams, SubscriptionFilter,
    TASKS_EXTENSION_ID, ToolsCapability, UpdateTaskParams,
};
use rmcp::service::{RequestContext, RoleServer, SubscriptionContext};
use rmcp::{ErrorData, ServerHandler};

use super::{MODERN_PROTOCOL, NEWEST_PROTOCOL, SuperpiMcp, is_modern};
use crate::catalog;
use crate::tools::{self, HARNESS_TASK, HarnessTaskArgs};

/// The MCP request methods this server serves.
const KNOWN_METHODS: &[&str] = &[
    "initialize",
    "server/discover",
    "ping",
    "tools/list",
    "tools/call",
    "prompts/list",
    "prompts/get",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "logging/setLevel",
    "tasks/get",
    "tasks/update",
    "tasks/cancel",
    "subscriptions/listen",
];

/// What `initialize` answers: static, no kernel needed.
pub fn server_config() -> ServerConfig {
    let mut capabilities = ServerCapabilities::default();
    capabilities.tools = Some(ToolsCapability::default());
    capabilities.prompts = Some(PromptsCapability::default());
    // For `subscriptions/listen` (2026-07-28): the resource list's changes and transcripts'
    // updates. An `initialize` answer drops both: the earlier revisions' `resources/subscribe`
    // is not served.
    let mut resources = ResourcesCapability::default();
    (resources.subscribe, resources.list_changed) = (Some(true), Some(true));
    capabilities.resources = Some(resources);
    capabilities.logging = Some(Default::default());
    // The tasks extension (2026-07-28): harness_task as a task for a client that declares it.
    capabilities
        .extensions
        .get_or_insert_with(Default::default)
        .insert(TASKS_EXTENSION_ID.to_string(), Default::default());
    ServerConfig::new(capabilities)
        .with_protocol_version(NEWEST_PROTOCOL)
        .with_server_info(
            Implementation::new("superpi", env!("CARGO_PKG_VERSION"))
                .with_title("superpi")
                .with_description("superpi's confined tools and whole agent turns"),
        )
        .with_instructions(
            "superpi runs tools confined by its sandbox and its permission policy, in the workspace \
             this server was started in. read, write, edit, bash, grep, find and ls act on that \
             workspace; harness_task runs a whole agent turn and returns its answer. Prompts name \
             the harnesses; resources hold the workspace context, the tool list and transcripts.",
        )
}

/// How long a 2026-07-28 client may reuse the tool and prompt lists: they change only when the
/// kernel's settings (tools, harnesses) change, and they are the principal's own.
pub const CATALOG_TTL_MS: u64 = 60_000;

/// How long the resource templates stay fresh: fixed for a superpi version.
pub const TEMPLATES_TTL_MS: u64 = 3_600_000;

/// The caching hints (`ttlMs`, `cacheScope`) of a list result, for a request at 2026-07-28 or
/// later only: older revisions know no such fields.
pub fn cache_hint(context: &RequestContext<RoleServer>, ttl_ms: u64, scope: CacheScope) -> Option<(u64, CacheScope)> {
    is_modern(context).then_some((ttl_ms, scope))
}

impl ServerHandler for SuperpiMcp {
    fn get_info(&self) -> ServerConfig {
        server_config()
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(ProtocolVersion::known_up_to(&MODERN_PROTOCOL))
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        tracing::debug!(
            requested = %request.protocol_version,
            client = %request.client_info.name,
            "initialize"
        );
        context.peer.set_peer_info(request.clone());
        let mut result = self.negotiate_initialize(&request)?;
        result.capabilities.resources = Some(ResourcesCapability::default());
        Ok(result)
    }

    fn accepted_subscription_filter(&self, requested: &SubscriptionFilter) -> Option<SubscriptionFilter> {
        Some(super::listen::accepted(requested))
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        self.listen_stream(context).await
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.inner.log.set_level(request.level);
        tracing::debug!(level = ?request.level, "client log level set");
        Ok(())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let mut list: Vec<_> = self.tool_defs().await?.iter().map(tools::tool_from_def).collect();
        list.push(tools::harness_task_tool());
        let result = ListToolsResult::with_all_items(list);
        Ok(match cache_hint(&context, CATALOG_TTL_MS, CacheScope::Private) {
            Some((ttl, scope)) => result.with_ttl_ms(ttl).with_cache_scope(scope),
            None => result,
        })
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if request.name == HARNESS_TASK {
            let args = HarnessTaskArgs::parse(request.arguments.as_ref())?;
            if is_modern(&context) && context.client_capabilities().is_some_and(|caps| caps.supports_tasks()) {
                return self.start_task(args, &context).await;
            }
            return self.tracked(self.harness_task(args, &context)).await.map(CallToolResponse::from);
        }
        self.tracked(self.call_kernel_tool(request, &context)).await
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        self.task_state(&request.task_id, &context).await
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.answer_task(&request.task_id, &request.input_responses).await
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        SuperpiMcp::cancel_task(self, &request.task_id).await
    }

    /// rmcp reads a request of a known method whose params it cannot read as a custom
    /// request; that is bad params, not an unknown method.
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        if KNOWN_METHODS.contains(&request.method.as_str()) {
            return Err(ErrorData::invalid_params(format!("invalid params for {}", request.method), None));
        }
        Err(ErrorData::new(ErrorCode::METHOD_NOT_FOUND, format!("method not found: {}", request.method), None))
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        let result = ListPromptsResult::with_all_items(catalog::prompts(&self.harnesses().await?));
        Ok(match cache_hint(&context, CATALOG_TTL_MS, CacheScope::Private) {
            Some((ttl, scope)) => result.with_ttl_ms(ttl).with_cache_scope(scope),
            None => result,
        })
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let harnesses = self.harnesses().await?;
        catalog::get_prompt(&request.name, request.arguments.as_ref(), &harnesses).map(GetPromptResponse::from)
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let result = ListResourcesResult::with_all_items(catalog::resources(&self.started_conversations()));
        // The list names the conversations harness_task started: stale as soon as one starts.
        Ok(match cache_hint(&context, 0, CacheScope::Private) {
            Some((ttl, scope)) => result.with_ttl_ms(ttl).with_cache_scope(scope),
            None => result,
        })
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        let result = ListResourceTemplatesResult::with_all_items(catalog::resource_templates());
        // The same fixed templates for every user of every superpi of this version.
        Ok(match cache_hint(&context, TEMPLATES_TTL_MS, CacheScope::Public) {
            Some((ttl, scope)) => result.with_ttl_ms(ttl).with_cache_scope(scope),
            None => result,
        })
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        self.read(&request.uri).await.map(ReadResourceResponse::from)
    }
}
