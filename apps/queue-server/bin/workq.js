#!/usr/bin/env node
import { runTs } from './run-ts.js';

runTs('tools/workq.ts');
