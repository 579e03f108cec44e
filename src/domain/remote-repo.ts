import { z } from 'zod';

/**
 * A job on a remote repository (spec 09 "Remote workspaces"): `"repo": {"url", "ref"}` instead of a
 * `workspace`. The coordinator checks the ref out for the job; its nodes fetch from the URL and push
 * their branches back to it. The URL reaches `git fetch` and `git push` on every machine of the
 * cluster, so only plain transports pass: a `<helper>::` form (`ext::sh -c …` runs a command), an
 * option (`-u…`), a credential in the URL (it would be stored, shown and sent to every node: give it
 * to git's credential helper on each machine) or a control character is refused.
 */
export interface RemoteRepo {
  url: string;
  /** A branch, tag or other ref of the remote; `HEAD` (its default branch) when not given. */
  ref: string;
}

/** The transports git may use for a job's repository (`GIT_ALLOW_PROTOCOL` on every call with its URL). */
export const REMOTE_PROTOCOLS = 'file:git:http:https:ssh';

const SCHEMES = new Set(['https:', 'http:', 'ssh:', 'git:', 'file:']);
/** `user@host:path`, git's scp-like form for ssh. */
const SCP_LIKE = /^(?:[A-Za-z0-9._-]+@)?[A-Za-z0-9.-]+:(?!\/\/)[^\s]+$/;
/** A ref as git takes it (`git check-ref-format`'s rules, simplified to refuse rather than guess). */
const REF = /^(?![-+])(?!.*\.\.)(?!.*\/\/)(?!.*@\{)(?!.*\.lock$)(?!.*\/$)(?!.*\.$)[A-Za-z0-9._/+-]{1,250}$/;

/** Why a URL is not one gaffer hands to git, or null when it is. */
export function remoteUrlProblem(url: string): string | null {
  if (/[\u0000-\u001f\u007f]/.test(url) || /\s/.test(url)) return 'must not hold spaces or control characters';
  if (url.startsWith('-')) return 'must not start with "-" (git would read it as an option)';
  if (/^[A-Za-z][A-Za-z0-9+.-]*::/.test(url))
    return 'must not name a git remote helper ("<transport>::…" runs a program of its own): give an https://, ssh://, git:// or file:// URL, user@host:path, or an absolute path';
  if (url.startsWith('/')) return null;
  if (/^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(url)) {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      return 'is not a URL git can read';
    }
    if (!SCHEMES.has(parsed.protocol))
      return `uses ${parsed.protocol.slice(0, -1)}:// — give an https://, ssh://, git:// or file:// URL, user@host:path, or an absolute path`;
    if (parsed.password !== '')
      return 'must not hold a password or token: it would be stored with the job and sent to every node — give it to git on each machine (a credential helper, an ssh key)';
    if (parsed.protocol === 'file:' && !parsed.pathname.startsWith('/')) return 'a file:// URL needs an absolute path';
    return null;
  }
  if (SCP_LIKE.test(url)) return null;
  return 'must be an https://, ssh://, git:// or file:// URL, user@host:path, or an absolute path (a relative path means nothing on another machine)';
}

/** The request's `repo`: the URL and ref, each refused by name when git must not see it. */
export const remoteRepoSchema = z.strictObject({
  url: z
    .string()
    .min(1)
    .max(2_048)
    .superRefine((url, ctx) => {
      const problem = remoteUrlProblem(url);
      if (problem !== null) ctx.addIssue({ code: 'custom', message: problem });
    }),
  ref: z
    .string()
    .regex(
      REF,
      'must be a branch, tag or ref name (letters, digits, ".", "_", "/", "+", "-"; no "..", no leading "-" or "+")',
    )
    .optional(),
});

/** What a `repo` reads as after its defaults. */
export function remoteRepoOf(input: z.output<typeof remoteRepoSchema>): RemoteRepo {
  return { url: input.url, ref: input.ref ?? 'HEAD' };
}
