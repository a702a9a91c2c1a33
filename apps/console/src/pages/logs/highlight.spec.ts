import { fieldSegments, parseHighlight } from './highlight';

describe('highlights of the search answer', () => {
  it('splits a highlight into marked and unmarked text', () => {
    expect(parseHighlight('user.<em>login</em>')).toEqual([
      { text: 'user.', mark: false },
      { text: 'login', mark: true },
    ]);
    expect(parseHighlight('<em>user.password_reset</em>.failed')).toEqual([
      { text: 'user.password_reset', mark: true },
      { text: '.failed', mark: false },
    ]);
    expect(parseHighlight('<em>a</em><em>b</em> c')).toEqual([
      { text: 'ab', mark: true },
      { text: ' c', mark: false },
    ]);
    expect(parseHighlight('')).toEqual([]);
  });

  it('decodes the escapes once, so markup in values stays text', () => {
    expect(parseHighlight('&lt;script&gt;<em>alert</em>(&quot;x&quot;)&lt;/script&gt; Tom&#39;s &amp;amp;')).toEqual([
      { text: '<script>', mark: false },
      { text: 'alert', mark: true },
      { text: '("x")</script> Tom\'s &amp;', mark: false },
    ]);
    expect(parseHighlight('&#x1F600; &#233;')).toEqual([{ text: '😀 é', mark: false }]);
  });

  it('refuses anything that is not the promised shape', () => {
    for (const bad of ['<b>x</b>', '<em>x', 'x</em>', '<em><em>x</em></em>', 'a < b', 'a & b', '&nope;', '&#xD800;', '<img src=x onerror=alert(1)>', '<EM>x</EM', '<em class="x">y</em>']) {
      expect([bad, parseHighlight(bad)]).toEqual([bad, undefined]);
    }
  });

  it('marks only the field’s real value: a highlight that reads as another text is not used', () => {
    expect(fieldSegments('ada@example.com', '<em>ada</em>@example.com')).toEqual([
      { text: 'ada', mark: true },
      { text: '@example.com', mark: false },
    ]);
    expect(fieldSegments('ada@example.com', undefined)).toEqual([{ text: 'ada@example.com', mark: false }]);
    expect(fieldSegments('ada@example.com', '<em>eve</em>@example.com')).toEqual([{ text: 'ada@example.com', mark: false }]);
    expect(fieldSegments('a<b', 'a<em><</em>b')).toEqual([{ text: 'a<b', mark: false }]);
    expect(fieldSegments('a<b', 'a<em>&lt;</em>b')).toEqual([
      { text: 'a', mark: false },
      { text: '<', mark: true },
      { text: 'b', mark: false },
    ]);
    expect(fieldSegments('', undefined)).toEqual([]);
  });
});
