import { useState } from 'react';

/** The theme follows the system unless one is chosen; the choice is remembered in this browser. */
export type ThemeChoice = 'system' | 'light' | 'dark';
const KEY = 'tracehouse.theme';

export function storedTheme(): ThemeChoice {
  try {
    const v = localStorage.getItem(KEY);
    return v === 'light' || v === 'dark' ? v : 'system';
  } catch {
    return 'system'; // storage refused (private mode, policy): follow the system
  }
}

/** Sets the page's theme (styles.css reads data-theme; without it the system's preference applies). */
export function applyTheme(choice: ThemeChoice): void {
  const root = document.documentElement;
  if (choice === 'system') root.removeAttribute('data-theme');
  else root.setAttribute('data-theme', choice);
}

export function ThemeToggle() {
  const [choice, setChoice] = useState<ThemeChoice>(storedTheme);
  const choose = (next: ThemeChoice) => {
    setChoice(next);
    applyTheme(next);
    try {
      if (next === 'system') localStorage.removeItem(KEY);
      else localStorage.setItem(KEY, next);
    } catch {
      // not remembered: the choice still applies to this page
    }
  };
  return (
    <label>
      Theme{' '}
      <select value={choice} onChange={(e) => choose(e.target.value as ThemeChoice)}>
        <option value="system">System</option>
        <option value="light">Light</option>
        <option value="dark">Dark</option>
      </select>
    </label>
  );
}
