import { render } from 'preact';
import { App } from './app.js';
import './styles.css';

render(<App />, document.getElementById('app') as HTMLElement);
