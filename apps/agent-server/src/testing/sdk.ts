/** Small helpers the agent-server specs share for talking to the server through the published client. */

export type Msg = { type: string; content: string };

/** A graph input of one user message. */
export const user = (content: string) => ({ messages: [{ role: 'user', content }] });

/** The messages of a state's values as `type:content` strings. */
export const contents = (values: unknown) => ((values as { messages: Msg[] }).messages ?? []).map((m) => `${m.type}:${m.content}`);

/** An id no test creates. */
export const MISSING = '00000000-0000-4000-8000-000000000000';

/** Status of an SDK error (it throws Error("HTTP <status>: <body>") with .status); 200 when it does not throw. */
export const statusOf = async (p: Promise<unknown>): Promise<number> => {
  try {
    await p;
  } catch (err) {
    return (err as { status?: number }).status ?? -1;
  }
  return 200;
};

/** The `detail` list of a 422 answer. */
export const detail = async (r: Response) => ((await r.json()) as { detail: { loc: (string | number)[]; msg: string; type: string }[] }).detail;

export type Detail = { loc: (string | number)[]; msg: string; type: string }[];

/** A 422 answer: {detail: [{loc, msg, type}]}, nothing else in the body, and at least one entry. */
export const detail422 = async (r: Response): Promise<Detail> => {
  expect(r.status).toBe(422);
  const body = (await r.json()) as { detail: Detail };
  expect(Object.keys(body)).toEqual(['detail']);
  expect(body.detail.length).toBeGreaterThan(0);
  for (const d of body.detail) expect(d).toEqual({ loc: expect.any(Array), msg: expect.any(String), type: expect.any(String) });
  return body.detail;
};

/** A JSON request straight to the server (for what the client cannot send). */
export const sendJson = (baseUrl: string, method: string, path: string, body: unknown) =>
  fetch(`${baseUrl}${path}`, { method, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
