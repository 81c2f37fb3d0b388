import { render } from 'preact';
import { App } from './app.tsx';
import './styles.css';
import './pages.css';
import './phone.css';

render(<App />, document.getElementById('app')!);
