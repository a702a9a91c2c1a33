/**
 * A small list of passwords of 12+ characters that are common, predictable or appear in public breach lists
 * (compared case-insensitively). It catches the obvious; it is not a breach database.
 */
export const COMMON_PASSWORDS = new Set([
  '123456789012', '1234567890123', '12345678901234', '123456789000', '000000000000', '111111111111',
  '123123123123', '121212121212', '112233445566', '987654321098', '098765432109', 'abcdefghijkl',
  'abc123abc123', 'abcd1234abcd', 'qwertyuiopas', 'qwertyuiop12', 'qwertyuiop123', 'qwerty123456',
  '1qaz2wsx3edc', '1q2w3e4r5t6y', 'q1w2e3r4t5y6', 'asdfghjkl123', 'zxcvbnm12345', 'qazwsxedcrfv',
  'password1234', 'password12345', 'password123!', 'password!234', 'passw0rd1234', 'p@ssw0rd1234',
  'p@ssword1234', 'mypassword123', 'mypassword12', 'yourpassword', 'passwordpassword', 'password1!23',
  'changeme1234', 'changemenow!', 'letmein12345', 'letmeinplease', 'welcome12345', 'welcome123!!',
  'iloveyou1234', 'iloveyou12345', 'trustno1trustno1', 'administrator', 'administrator1', 'admin1234567',
  'adminadmin12', 'rootroot1234', 'superuser123', 'secret123456', 'supersecret1', 'supersecret123',
  'football1234', 'baseball1234', 'basketball12', 'sunshine1234', 'princess1234', 'dragon123456',
  'monkey123456', 'master123456', 'shadow123456', 'michael12345', 'jennifer1234', 'computer1234',
  'internet1234', 'starwars1234', 'pokemon12345', 'whatever1234', 'qwertyqwerty', 'asdfasdfasdf',
  'aaaaaaaaaaaa', 'correcthorsebatterystaple', 'thisismypassword', 'mysecretpassword', 'summer2024!!',
  'winter2024!!', 'spring2025!!', 'autumn2025!!', 'january2025!', 'company12345', 'companyname1',
]);
