import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { CallToolRequestSchema, ListToolsRequestSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { GafferError, toGafferError } from '../../domain/errors.js';
import type { Engine } from '../../engine/engine.js';
import { COORDINATOR_GUIDE } from '../guide.js';
import { TOOLS, type ToolContext } from './tools.js';

/** Who calls: the owner whose jobs it sees (null: all), and the client's working directory when known (workspace vetting). */
export interface McpCaller {
  owner: string | null;
  cwd: string | null;
}

/** Builds an MCP server over the engine: the tools of spec 02, the guide as a prompt and a resource. */
export function createMcpServer(engine: Engine, caller: McpCaller, version: string): McpServer {
  const server = new McpServer(
    { name: 'gaffer', version },
    { capabilities: { tools: {}, prompts: {}, resources: {} } },
  );

  server.registerPrompt(
    'coordinator-guide',
    { title: 'How to use gaffer', description: 'When to dispatch, how to write a task, how to read the answer.' },
    () => ({
      messages: [{ role: 'user', content: { type: 'text', text: COORDINATOR_GUIDE } }],
    }),
  );
  server.registerResource(
    'guide',
    'gaffer://guide',
    { title: 'gaffer coordinator guide', mimeType: 'text/markdown' },
    (uri) => ({
      contents: [{ uri: uri.href, mimeType: 'text/markdown', text: COORDINATOR_GUIDE }],
    }),
  );

  // Tools are served by hand, not registerTool: the arguments are validated by the same request
  // schema as the HTTP API, inside the engine, so a refusal has the one error shape of spec 02.
  server.server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: TOOLS.map((t) => ({ name: t.name, description: t.description, inputSchema: t.inputSchema() })),
  }));
  server.server.setRequestHandler(CallToolRequestSchema, async (request, extra): Promise<CallToolResult> => {
    const tool = TOOLS.find((t) => t.name === request.params.name);
    const ctx: ToolContext = {
      engine,
      owner: caller.owner,
      cwd: caller.cwd,
      progress: async (progress, total, message) => {
        const token = request.params._meta?.progressToken;
        if (token === undefined) return;
        await extra.sendNotification({
          method: 'notifications/progress',
          params: { progressToken: token, progress, total, message },
        });
      },
      signal: extra.signal,
    };
    try {
      if (!tool)
        throw new GafferError(
          'not_found',
          `no tool ${JSON.stringify(request.params.name)} (tools: ${TOOLS.map((t) => t.name).join(', ')})`,
          'name',
        );
      const result = await tool.run(request.params.arguments ?? {}, ctx);
      return { content: [{ type: 'text', text: JSON.stringify(result) }], structuredContent: result };
    } catch (err) {
      const { error } = toGafferError(err).toBody();
      return {
        isError: true,
        content: [{ type: 'text', text: JSON.stringify({ error }) }],
        structuredContent: { error },
      };
    }
  });
  return server;
}
