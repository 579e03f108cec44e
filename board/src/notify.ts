import { useState } from 'preact/hooks';
import { useJobChanges } from './live.js';

const KEY = 'gaffer.notify';

/**
 * Browser notifications (issue 16): opt-in, and only on a job that ended done or a new ask — never
 * on every status change. The choice is kept in localStorage; the browser's permission is asked
 * only when the person turns them on.
 */
export function useNotifications(): { on: boolean; supported: boolean; toggle: () => Promise<void> } {
  const supported = typeof Notification !== 'undefined';
  const [on, setOn] = useState(
    () => supported && localStorage.getItem(KEY) === '1' && Notification.permission === 'granted',
  );
  useJobChanges((c) => {
    if (!on || c.kind !== 'status') return;
    if (c.status === 'done')
      new Notification(`gaffer: done — ${c.title}`, { body: c.verdict ?? '', tag: `done-${c.id}` });
    else if (c.status === 'awaiting_approval')
      new Notification(`gaffer: needs your yes — ${c.title}`, {
        body: 'a job waits for your answer',
        tag: `ask-${c.id}`,
      });
  });
  const toggle = async () => {
    if (!supported) return;
    if (on) {
      localStorage.setItem(KEY, '0');
      setOn(false);
      return;
    }
    const permission = Notification.permission === 'granted' ? 'granted' : await Notification.requestPermission();
    const granted = permission === 'granted';
    localStorage.setItem(KEY, granted ? '1' : '0');
    setOn(granted);
  };
  return { on, supported, toggle };
}
