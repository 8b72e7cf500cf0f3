import type { Project } from '@th/contracts';
import { route, type ApiClient } from './api-client';
import { UUID } from './command';
import { CommandFailed } from './errors';

const LIST_PROJECTS = route('get', '/api/v1/sessions');

/** A tracing project's id, from its id or its name. */
export async function projectId(client: ApiClient, ref: string): Promise<string> {
  if (UUID.test(ref)) return ref;
  const found = await client.call<Project[]>(LIST_PROJECTS, { query: { name: ref, limit: 1 } });
  if (!found[0]) throw new CommandFailed(`no tracing project named ${JSON.stringify(ref)}`);
  return found[0].id;
}
