import { useEffect, useRef, useState, type FormEvent } from 'react';
import { useQueryClient } from '@tanstack/react-query';
import { api, type SessionInfo } from '../api';
import { navigate, paths } from '../router';

/** Where to go after signing in: the page that asked (only a path of this app), else the projects. */
function nextPath(session: SessionInfo): string {
  const next = new URLSearchParams(window.location.search).get('next');
  return next && next.startsWith('/') && !next.startsWith('//') ? next : paths.projects(session.tenant_id);
}

export function LoginView() {
  const qc = useQueryClient();
  const [mode, setMode] = useState<'key' | 'password'>('key');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const tried = useRef(false);

  const signIn = async (body: Record<string, string>) => {
    setBusy(true);
    setError(null);
    try {
      const session = await api<SessionInfo>('/auth/session', { json: body });
      qc.setQueryData(['session'], session);
      navigate(nextPath(session), { replace: true });
    } catch (err) {
      setError(err instanceof Error ? err.message : String(err));
    } finally {
      setBusy(false);
    }
  };

  // The one-time link `npm start` prints: the token is in the fragment, so it never reaches a server log.
  useEffect(() => {
    const token = new URLSearchParams(window.location.hash.slice(1)).get('token');
    if (!token || tried.current) return;
    tried.current = true;
    window.history.replaceState(null, '', window.location.pathname + window.location.search);
    void signIn({ sign_in_token: token });
  });

  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const data = new FormData(e.currentTarget);
    const field = (name: string) => String(data.get(name) ?? '');
    void signIn(mode === 'key' ? { api_key: field('api_key') } : { email: field('email'), password: field('password') });
  };

  return (
    <main className="login">
      <h1>Sign in to Tracehouse</h1>
      <div role="tablist" aria-label="Sign-in method" className="tabs">
        <button type="button" role="tab" aria-selected={mode === 'key'} onClick={() => setMode('key')}>API key</button>
        <button type="button" role="tab" aria-selected={mode === 'password'} onClick={() => setMode('password')}>Email and password</button>
      </div>
      <form onSubmit={submit} aria-label="Sign in">
        {mode === 'key' ? (
          <label>
            API key
            <input name="api_key" type="password" autoComplete="off" required />
          </label>
        ) : (
          <>
            <label>
              Email
              <input name="email" type="email" autoComplete="username" required />
            </label>
            <label>
              Password
              <input name="password" type="password" autoComplete="current-password" required />
            </label>
          </>
        )}
        <button type="submit" disabled={busy}>Sign in</button>
        {error && <p role="alert" className="error">{error}</p>}
      </form>
      <p className="hint">The key is exchanged for a session cookie; the browser does not keep it.</p>
    </main>
  );
}
