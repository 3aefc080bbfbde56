import { ResourceTemplate, type McpServer } from '@modelcontextprotocol/server';
import * as z from 'zod/v4';
import { PNG_BASE64 } from './conformance-upstream-tools.js';

/**
 * The resources, resource template, prompts, completions, subscriptions and logging level of the
 * conformance fixture, under the names and URIs the `resources-*`, `prompts-*`,
 * `completion-complete` and `logging-set-level` scenarios use.
 */

/** The URIs a 2025 session subscribed to (kept per server instance: one per session). */
export type Subscriptions = Set<string>;

function staticResource(
  server: McpServer,
  name: string,
  uri: string,
  mimeType: string,
  body: { text: string } | { blob: string },
): void {
  server.registerResource(name, uri, { title: name, description: `The fixture's ${name} resource`, mimeType }, () => ({
    contents: [{ uri, mimeType, ...body }],
  }));
}

export function registerResources(server: McpServer, subscriptions: Subscriptions): void {
  staticResource(server, 'static-text', 'test://static-text', 'text/plain', {
    text: 'This is the content of the static text resource.',
  });
  staticResource(server, 'static-binary', 'test://static-binary', 'image/png', { blob: PNG_BASE64 });
  staticResource(server, 'watched-resource', 'test://watched-resource', 'text/plain', {
    text: 'Watched resource content',
  });
  server.registerResource(
    'template',
    new ResourceTemplate('test://template/{id}/data', { list: undefined }),
    { title: 'Resource template', description: 'Data for an id', mimeType: 'application/json' },
    (uri, variables) => ({
      contents: [
        {
          uri: uri.toString(),
          mimeType: 'application/json',
          text: JSON.stringify({ id: variables.id, templateTest: true, data: `Data for ID: ${String(variables.id)}` }),
        },
      ],
    }),
  );
  server.server.setRequestHandler('resources/subscribe', (request) => {
    subscriptions.add(request.params.uri);
    return {};
  });
  server.server.setRequestHandler('resources/unsubscribe', (request) => {
    subscriptions.delete(request.params.uri);
    return {};
  });
}

export function registerPrompts(server: McpServer): void {
  server.registerPrompt(
    'test_simple_prompt',
    { title: 'Simple prompt', description: 'A prompt without arguments' },
    () => ({
      messages: [{ role: 'user', content: { type: 'text', text: 'This is a simple prompt for testing.' } }],
    }),
  );
  server.registerPrompt(
    'test_prompt_with_arguments',
    {
      title: 'Prompt with arguments',
      description: 'Two required arguments',
      argsSchema: z.object({
        arg1: z.string().describe('First test argument'),
        arg2: z.string().describe('Second test argument'),
      }),
    },
    (args) => ({
      messages: [
        {
          role: 'user',
          content: { type: 'text', text: `Prompt with arguments: arg1='${args.arg1}', arg2='${args.arg2}'` },
        },
      ],
    }),
  );
  server.registerPrompt(
    'test_prompt_with_embedded_resource',
    {
      title: 'Prompt with an embedded resource',
      description: 'Embeds the resource it is given',
      argsSchema: z.object({ resourceUri: z.string().describe('URI of the resource to embed') }),
    },
    (args) => ({
      messages: [
        {
          role: 'user',
          content: {
            type: 'resource',
            resource: { uri: args.resourceUri, mimeType: 'text/plain', text: 'Embedded resource content for testing.' },
          },
        },
        { role: 'user', content: { type: 'text', text: 'Please process the embedded resource above.' } },
      ],
    }),
  );
  server.registerPrompt(
    'test_prompt_with_image',
    { title: 'Prompt with an image', description: 'An image, then text about it' },
    () => ({
      messages: [
        { role: 'user', content: { type: 'image', data: PNG_BASE64, mimeType: 'image/png' } },
        { role: 'user', content: { type: 'text', text: 'Please analyze the image above.' } },
      ],
    }),
  );
}

/** `completion/complete` (an empty answer is a valid one) and the 2025 era's `logging/setLevel`. */
export function registerUtilities(server: McpServer): void {
  server.server.setRequestHandler('completion/complete', () => ({
    completion: { values: [], total: 0, hasMore: false },
  }));
  server.server.setRequestHandler('logging/setLevel', () => ({}));
}
