import { describe, expect, it } from 'vitest';
import { LineSplitter } from '../../src/platform/process/line-splitter.js';
import { OutputTail, decodeUtf8Whole } from '../../src/platform/process/output-tail.js';

describe('OutputTail', () => {
  it('keeps the newest bytes only, whatever the chunk sizes', () => {
    const tail = new OutputTail(10);
    tail.push(Buffer.from('0123'));
    tail.push(Buffer.from('456789ab'));
    expect(tail.text()).toBe('23456789ab');
    tail.push(Buffer.from('cdefghijklmnop'));
    expect(tail.text()).toBe('ghijklmnop');
    expect(tail.byteLength).toBe(10);
  });

  it('never starts or ends with half a character', () => {
    const tail = new OutputTail(4);
    tail.push(Buffer.from('aé€')); // 1 + 2 + 3 bytes: the cut falls inside é
    expect(tail.text()).toBe('€');
    expect(decodeUtf8Whole(Buffer.from('ab€').subarray(0, 4))).toBe('ab');
    expect(decodeUtf8Whole(Buffer.from('😀x').subarray(2))).toBe('x');
    expect(decodeUtf8Whole(Buffer.from('é'))).toBe('é');
  });
});

describe('LineSplitter', () => {
  it('joins a line split across chunks and strips \\r\\n', () => {
    const splitter = new LineSplitter();
    expect(splitter.push(Buffer.from('ab'))).toEqual([]);
    expect(splitter.push(Buffer.from('c\r\nde'))).toEqual(['abc']);
    expect(splitter.push(Buffer.from([0xc3]))).toEqual([]);
    expect(splitter.push(Buffer.from([0xa9, 0x0a, 0x0a]))).toEqual(['deé', '']);
    expect(splitter.flush()).toEqual([]);
  });

  it('cuts a line that never ends so memory stays bounded', () => {
    const splitter = new LineSplitter(4);
    expect(splitter.push(Buffer.from('abcdefghij'))).toEqual(['abcd', 'efgh']);
    expect(splitter.flush()).toEqual(['ij']);
  });
});
